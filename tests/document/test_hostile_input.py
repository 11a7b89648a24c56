"""Inputs meant to make the parsers slow or to lose data: time stays linear in the input,
each is one clear error."""

from __future__ import annotations

import io
import time

import pytest

from imixs_archive.budget import Budget, ClientGoneError, within
from imixs_archive.document.xml_reader import iter_xml_documents, read_xml
from imixs_archive.errors import HostileInputError

HEAD = b'<document><item name="a"><value>x</value></item>'
SIZE = 32 * 2**20


def _parse_seconds(body: bytes) -> tuple[float, Exception | None]:
    started = time.perf_counter()
    try:
        list(iter_xml_documents(io.BytesIO(body)))
    except HostileInputError as exc:
        return time.perf_counter() - started, exc
    return time.perf_counter() - started, None


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
