"""Fuzzing both codecs (hypothesis): any bytes, any JSON, mutated real documents. The
reader answers with documents or one ``DocumentError``, never another exception; what it
reads and XML can carry writes and reads back the same. Bounded by hypothesis's example
counts (FUZZ_EXAMPLES per test, default 150)."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imixs_archive.document.json_codec import read_json, to_json
from imixs_archive.document.json_stream import iter_json_stream
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_safe import require_xml_safe
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import DocumentError

DATA = Path(__file__).parents[1] / "data" / "imixs"
SAMPLES = [p.read_bytes() for p in sorted(DATA.glob("*.xml"))[:6]]
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _read_xml_or_refuse(data: bytes) -> None:
    try:
        docs = read_xml(data)
    except DocumentError:
        return
    for doc in docs:
        try:
            require_xml_safe(doc)
        except DocumentError:
            continue
        assert read_xml(to_xml(doc)) == [doc]


def _read_json_or_refuse(data: str | bytes) -> None:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        docs = read_json(data)
    except DocumentError:
        with contextlib.suppress(DocumentError):
            list(iter_json_stream(io.BytesIO(raw)))  # refused too, or read: never a crash
        return
    assert list(iter_json_stream(io.BytesIO(raw))) == docs
    for doc in docs:
        try:
            require_xml_safe(doc)
            written = to_xml(doc)
        except DocumentError:
            continue
        assert read_xml(written) == [doc]
        assert read_json(to_json(doc)) == [doc]


@FUZZ
@given(st.binary(max_size=4000))
def test_any_bytes_as_xml(data: bytes) -> None:
    _read_xml_or_refuse(data)


@FUZZ
@given(
    st.sampled_from(SAMPLES),
    st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=8)), max_size=6),
)
def test_mutated_real_documents_as_xml(sample: bytes, edits: list[tuple[int, bytes]]) -> None:
    data = bytearray(sample)
    for position, replacement in edits:
        at = position % (len(data) + 1)
        data[at : at + len(replacement)] = replacement
    _read_xml_or_refuse(bytes(data))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
TYPED = st.fixed_dictionaries(
    {
        "@type": st.sampled_from(
            [
                "xs:string",
                "xs:int",
                "xs:long",
                "xs:double",
                "xs:boolean",
                "xs:dateTime",
                "xs:base64Binary",
                "xs:decimal",
                "xs:float",
                "xmlItem",
                "xmlItemArray",
                "xs:nope",
            ]
        ),
        "$": st.text(max_size=30) | st.integers() | st.booleans(),
    }
)


@FUZZ
@given(st.lists(st.tuples(st.text(max_size=12), JSON_VALUES | TYPED), max_size=5))
def test_any_items_as_json(items: list[tuple[str, Any]]) -> None:
    body = {"item": [{"name": name, "value": value} for name, value in items]}
    _read_json_or_refuse(json.dumps(body))


@FUZZ
@given(st.text(max_size=2000))
def test_any_text_as_json(text: str) -> None:
    _read_json_or_refuse(text)
