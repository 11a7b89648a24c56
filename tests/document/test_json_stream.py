"""Imixs JSON from a stream: long strings spooled, base64 values decoded as read; the
same documents as the whole-input reader, in any block size, with bounded memory."""

from __future__ import annotations

import io
import random
import tracemalloc
from typing import Any

import pytest

from imixs_archive.document import json_stream
from imixs_archive.document.json_codec import read_json, to_json
from imixs_archive.document.json_stream import iter_json_stream
from imixs_archive.document.model import BinaryStream, Document
from imixs_archive.document.xml_reader import ReaderLimits
from imixs_archive.errors import DocumentError, HostileInputError
from support.snapshots import make_snapshot

DATA = random.Random(1).randbytes(300_000)


def _resolved(doc: Document) -> Document:
    """The document with streamed contents read into bytes (to compare)."""
    copy = doc.copy()
    for name, values in doc.items():
        copy[name] = [_bytes(value) for value in values]
    return copy


def _bytes(value: Any) -> Any:
    if isinstance(value, BinaryStream):
        return value.read_all()
    if isinstance(value, dict):
        return {k: [_bytes(v) for v in vs] for k, vs in value.items()}
    if isinstance(value, list):
        return [_bytes(v) for v in value]
    return value


@pytest.mark.parametrize("block", [1, 7, 4096, 10**7])
def test_the_same_documents_in_any_block_size(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_stream, "READ_BLOCK", block)
    long_text = "x" * 100_000 + '"\\\n\u00e9\u0001\U0001f600\ud83d/' + "y" * 70_000
    doc = make_snapshot(0, files={"a.bin": DATA}, note=long_text, other='tiny "q" \\ ')
    doc["x" * 70_000] = ["a long name"]
    body = to_json([doc, make_snapshot(1)])
    expected = read_json(body)
    got = [_resolved(d) for d in iter_json_stream(io.BytesIO(body))]
    assert got == expected
    [streamed] = list(iter_json_stream(io.BytesIO(to_json(doc))))[:1]
    assert isinstance(streamed, Document)


def test_a_spooled_base64_value_is_a_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    body = to_json(make_snapshot(0, files={"a.bin": DATA}))
    for doc in iter_json_stream(io.BytesIO(body)):
        content = doc["$file"][0]["a.bin"][1]
        assert isinstance(content, BinaryStream)
        assert content.read_all() == DATA


def test_reading_a_large_attachment_holds_little_memory() -> None:
    big = random.Random(2).randbytes(20 * 2**20)
    body = to_json(make_snapshot(0, files={"big.bin": big}))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for doc in iter_json_stream(io.BytesIO(body)):
            size = sum(len(p) for p in doc["$file"][0]["big.bin"][1].iter_bytes())
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert size == len(big)
    assert peak < 8 * 2**20, peak


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"item": [{"name": "a", "value": ["' + b"x" * 100_000, "unterminated string"),
        (
            b'{"item":[{"name":"b","value":[{"@type":"xs:base64Binary","$":"'
            + b"QUJD" * 30_000
            + b'!"}]}]}',
            "invalid base64",
        ),
    ],
)
def test_bad_json_streams_are_one_clear_error(body: bytes, says: str) -> None:
    with pytest.raises(DocumentError, match=says):
        for doc in iter_json_stream(io.BytesIO(body)):
            for value in doc["b"]:
                value.read_all()


def test_the_skeleton_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_stream, "MAX_SKELETON", 10_000)
    body = to_json([make_snapshot(n) for n in range(100)])
    with pytest.raises(HostileInputError, match="fewer documents per request"):
        list(iter_json_stream(io.BytesIO(body)))


def _body_with_text(*texts: str) -> bytes:
    return to_json(make_snapshot(0, **{f"note{n}": text for n, text in enumerate(texts)}))


def test_a_long_string_is_refused_at_the_limit_without_being_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Refused once it passes ``max_text`` characters while it is decoded: the reader
    never holds the whole string (nor its JSON text) at once."""
    limits = ReaderLimits(max_text=2**20)
    body = _body_with_text("abcd" * 1_500_000)  # 6 MB: under the quick rule (6 bytes a char)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        with pytest.raises(HostileInputError, match=f"longer than {2**20} characters"):
            list(iter_json_stream(io.BytesIO(body), limits))
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < len(body) // 2, peak


def test_the_text_one_input_holds_is_bounded() -> None:
    limits = ReaderLimits(max_text=300_000, max_held_text=500_000)
    fits = _body_with_text("a" * 200_000, "b" * 200_000)
    [doc] = iter_json_stream(io.BytesIO(fits), limits)
    assert doc["note1"] == ["b" * 200_000]
    too_much = to_json([make_snapshot(n, note="c" * 200_000) for n in range(3)])
    with pytest.raises(HostileInputError, match="500000 characters in one input"):
        list(iter_json_stream(io.BytesIO(too_much), limits))


@pytest.mark.parametrize(
    "text, says",
    [
        (b"abc\\q", "Invalid .escape"),
        (b"abc\\u12", "Invalid .uXXXX escape"),
        (b"a\x01b", "Invalid control character"),
        (b"\xff\xfe", "utf-8"),
    ],
)
def test_a_malformed_long_string_is_a_clear_error(text: bytes, says: str) -> None:
    body = b'{"item": [{"name": "a", "value": ["' + b"x" * 100_000 + text + b'"]}]}'
    with pytest.raises(DocumentError, match=says):
        list(iter_json_stream(io.BytesIO(body)))
