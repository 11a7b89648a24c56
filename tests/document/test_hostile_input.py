"""Inputs meant to make the parsers slow or to lose data: time stays linear in the input,
each is one clear error."""

from __future__ import annotations

import io
import json
import time

import pytest

from imixs_archive.budget import Budget, ClientGoneError, within
from imixs_archive.document.conventions import is_snapshot_id
from imixs_archive.document.json_codec import read_json
from imixs_archive.document.xml_reader import XSI_NS as XSI
from imixs_archive.document.xml_reader import iter_xml_documents, read_xml
from imixs_archive.errors import DocumentError, HostileInputError

HEAD = b'<document><item name="a"><value>x</value></item>'
SIZE = 32 * 2**20


def _parse_seconds(body: bytes) -> tuple[float, Exception | None]:
    """The CPU time this thread spent parsing (the parser runs in it): what other processes
    take of the machine does not count, as it did in the wall-clock time compared before."""
    started = time.thread_time()
    try:
        list(iter_xml_documents(io.BytesIO(body)))
    except HostileInputError as exc:
        return time.thread_time() - started, exc
    return time.thread_time() - started, None


@pytest.mark.parametrize(
    "token",
    [
        b'<item name="' + b"n" * SIZE + b'"><value>v</value></item>',
        b"<!--" + b"c" * SIZE + b"-->",
        b"<?pi " + b"p" * SIZE + b"?>",
        b'<item name="x"' + b" " * SIZE + b"><value>v</value></item>",
    ],
    ids=["attribute", "comment", "processing-instruction", "tag"],
)
def test_one_huge_token_costs_no_more_than_as_much_text(token: bytes) -> None:
    """expat 2.5 scans an unfinished token again with every block (CVE-2023-52425): a
    32 MB attribute value took 14-49 s. Compared with a value of 32 MB of text, parsed in
    the same run."""
    text_body = HEAD + b'<item name="t"><value>' + b"t" * SIZE + b"</value></item></document>"
    baseline, error = _parse_seconds(text_body)
    assert error is None
    seconds, error = _parse_seconds(HEAD + token + b"</document>")
    assert isinstance(error, HostileInputError)
    assert "larger than 1048576 bytes" in str(error)
    assert seconds < 2 * baseline + 0.5


def test_tokens_below_the_limit_read_whole_in_any_block_size() -> None:
    name = "n" * 1_000_000
    body = HEAD + f'<item name="{name}"><value>v</value></item><!-- c --></document>'.encode()
    for block in (7, 4096, 65536, len(body)):
        pieces = [body[i : i + block] for i in range(0, len(body), block)]
        [doc] = iter_xml_documents(pieces)
        assert doc[name] == ["v"] and doc["a"] == ["x"]
    assert read_xml(body)[0][name] == ["v"]


def test_parsing_stops_when_the_request_is_cancelled() -> None:
    budget = Budget(None)
    body = b"<data>" + HEAD + b"</document>" * 1 + (HEAD + b"</document>") * 50_000 + b"</data>"
    read = 0
    with within(budget), pytest.raises(ClientGoneError):
        for _doc in iter_xml_documents(io.BytesIO(body)):
            read += 1
            if read == 10:
                budget.cancel("the client went away")
    assert read < 50_000


@pytest.mark.parametrize("text", ["YQ=", "YR==", "YWJ=", "YQ=\n"])
def test_bad_base64_padding_is_refused(text: str) -> None:
    body = f'<document><item name="b"><value xsi:type="xs:base64Binary" xmlns:xsi="{XSI}">'
    with pytest.raises(DocumentError, match="padding"):
        read_xml(body + text + "</value></item></document>")
    with pytest.raises(DocumentError, match="padding"):
        typed = {"@type": "xs:base64Binary", "$": text.strip()}
        read_json(json.dumps({"item": [{"name": "b", "value": [typed]}]}))


@pytest.mark.parametrize("text", ["YQ==", "YQ", "YWI=", "Y Q = ="])
def test_good_and_tolerated_base64_reads(text: str) -> None:
    body = f'<document><item name="b"><value xsi:type="xs:base64Binary" xmlns:xsi="{XSI}">'
    [doc] = read_xml(body + text + "</value></item></document>")
    assert doc["b"][0] in (b"a", b"ab")


def test_a_snapshot_id_with_a_trailing_newline_is_no_snapshot_id() -> None:
    good = "270e3a6d-a0e4-4875-89f1-3b418859abe5-1519000000000"
    assert is_snapshot_id(good) and is_snapshot_id("156ea588638-ba4de2b-1519000000000")
    assert not is_snapshot_id(good + "\n")
    assert not is_snapshot_id("156ea588638-ba4de2b-1519000000000\n")
