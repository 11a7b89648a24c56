"""Round trips: every fixture, and random documents (hypothesis), both codecs.

Read, write, read again -> equal documents; write again -> identical bytes.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from imixs_archive.document.json_codec import read_json, to_json
from imixs_archive.document.model import (
    INT8,
    INT16,
    INT32,
    INT64,
    BigInteger,
    Byte,
    Document,
    Float,
    Long,
    Short,
    TypedText,
)
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import to_xml

DATA = Path(__file__).parents[1] / "data" / "imixs"
XML_FIXTURES = sorted(p.name for p in DATA.glob("*.xml"))
JSON_FIXTURES = ["simple.json", "simple_numbers.json", "multidocuments.json", "workitem.json"]


Read = Callable[[bytes], list[Document]]
Write = Callable[[list[Document]], bytes]


def assert_round_trip(read: Read, write: Write, docs: list[Document]) -> None:
    """Written and read again: equal documents; written again: identical bytes."""
    written = write(docs)
    again = read(written)
    assert again == docs
    assert write(again) == written


@pytest.mark.parametrize("name", XML_FIXTURES)
def test_xml_fixture_round_trip(name: str) -> None:
    docs = read_xml((DATA / name).read_bytes())
    assert_round_trip(read_xml, to_xml, docs)
    assert read_json(to_json(docs)) == docs


@pytest.mark.parametrize("name", JSON_FIXTURES)
def test_json_fixture_round_trip(name: str) -> None:
    docs = read_json((DATA / name).read_bytes())
    assert_round_trip(read_json, to_json, docs)
    assert read_xml(to_xml(docs)) == docs


def test_legacy_ids_kept() -> None:
    docs = read_xml(to_xml(read_xml((DATA / "export-test.xml").read_bytes())))
    assert docs[0]["$uniqueid"] == ["156ea588638-ba4de2b"]
    assert docs[0]["$workitemid"] == ["156ea588638-33b52d26"]


# -- random documents --------------------------------------------------------------------------

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
xml_text = st.text(st.characters(codec="utf-8")).map(lambda s: _NOT_XML.sub("", s))

offsets: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.just(dt.UTC),
    st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(lambda m: dt.timezone(dt.timedelta(minutes=m))),
)
datetimes = st.datetimes(
    min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=offsets
)

scalars = st.one_of(
    xml_text,
    st.integers(*INT32),
    st.integers(*INT64).map(Long),
    st.integers(*INT16).map(Short),
    st.integers(*INT8).map(Byte),
    st.integers(-(10**40), 10**40).map(BigInteger),
    st.integers(-(10**30), 10**30),
    st.floats(),
    st.floats(width=32).map(Float),
    st.booleans(),
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**12), max_value=10**12),
    datetimes,
    st.binary(max_size=64),
    st.builds(TypedText, st.sampled_from(["xs:unsignedShort", "xs:date", "xs:anyURI"]), xml_text),
)


def _nested(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        # a nested [None] is how Imixs writes an empty list too (at every level)
        st.lists(st.one_of(children, st.none()), max_size=4).filter(lambda v: v != [None]),
        st.dictionaries(xml_text, _item_values(children), max_size=3),
    )


def _item_values(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    # an item holding exactly [None] is how Imixs writes an empty list: it reads back as []
    return st.lists(st.one_of(values, st.none()), max_size=4).filter(lambda v: v != [None])


values = st.recursive(scalars, _nested, max_leaves=12)
names = xml_text.map(lambda s: s.strip().lower()).filter(bool)
documents = st.dictionaries(names, _item_values(values), max_size=6).map(Document)


@settings(max_examples=120, deadline=None)
@given(st.lists(documents, max_size=3))
def test_random_documents_xml(docs: list[Document]) -> None:
    assert_round_trip(read_xml, to_xml, docs)


@settings(max_examples=120, deadline=None)
@given(documents)
def test_random_document_xml_single(doc: Document) -> None:
    written = to_xml(doc)
    (back,) = read_xml(written)
    assert back == doc
    assert to_xml(back) == written


@settings(max_examples=120, deadline=None)
@given(st.lists(documents, max_size=3))
def test_random_documents_json(docs: list[Document]) -> None:
    assert_round_trip(read_json, to_json, docs)


def test_decimal_precision_kept() -> None:
    doc = Document({"d": Decimal("1234567890.123456789012345678901234567890")})
    assert read_xml(to_xml(doc))[0]["d"] == [Decimal("1234567890.123456789012345678901234567890")]
