"""Imixs JSON: fixtures, typed and plain values, nested values, refusals."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.document.json_codec import iter_json, read_json, to_json
from imixs_archive.document.model import (
    BigInteger,
    BinaryStream,
    Byte,
    Document,
    Float,
    Long,
    Short,
)
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import DocumentError

DATA = Path(__file__).parents[1] / "data" / "imixs"


def test_simple_fixture() -> None:
    (doc,) = read_json((DATA / "simple.json").read_bytes())
    assert doc["$isauthor"] == [True]
    assert doc["$readaccess"] == ["Anna"]
    assert doc["txtlog"] == ["A", "B", "C"]
    assert doc["$activityid"] == [10]


def test_multidocuments_fixture() -> None:
    docs = read_json((DATA / "multidocuments.json").read_bytes())
    assert [d["$readaccess"] for d in docs] == [["Anna"], ["Tom"]]
    assert [d["txtlog"] for d in docs] == [["A", "B", "C"], ["D", "E", "F"]]


def test_workitem_fixture() -> None:
    (doc,) = read_json((DATA / "workitem.json").read_text("utf-8"))
    assert doc["$uniqueid"] == ["14194929161-1003e42a"]  # a legacy id, kept
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert doc["$modified"] == [dt.datetime(2013, 10, 7, 22, 18, 55, 483000, tzinfo=plus_two)]


def test_corrupted_fixture_rejected_naming_the_duplicate_key() -> None:
    with pytest.raises(DocumentError) as info:
        read_json((DATA / "corrupted.json").read_bytes())
    message = str(info.value)
    assert "duplicate key 'value'" in message
    assert "'$readaccess'" in message


def test_simple_content_fixture_is_not_an_imixs_document() -> None:
    with pytest.raises(DocumentError) as info:
        read_json((DATA / "simple_content.json").read_bytes())
    message = str(info.value)
    assert message.startswith("not an Imixs document")
    assert "'id', 'name', 'position', 'content'" in message


@pytest.mark.parametrize("text", ["[1, 2]", '"x"', "null", '{"data": 5}'])
def test_other_json_is_not_an_imixs_document(text: str) -> None:
    with pytest.raises(DocumentError, match="not an Imixs document"):
        read_json(text)


def test_malformed_json_reports_position() -> None:
    with pytest.raises(DocumentError) as info:
        read_json('{"item": [\n  {"name": "a",}\n]}')
    assert info.value.where == "line 2, column 16"
    with pytest.raises(DocumentError, match="malformed JSON"):
        read_json(b"\xff\xfe{")


def test_plain_values() -> None:
    (doc,) = read_json(
        '{"item": [{"name": "$TaskID", "value": [1000]}, {"name": "s", "value": "x"},'
        ' {"name": "b", "value": true}, {"name": "f", "value": 1.5},'
        ' {"name": "n", "value": null}, {"name": "big", "value": [4294967296, 1e400]},'
        ' {"name": "none"}, {"name": "nested", "value": [[1, null], {"Key": ["v"]}]}]}'
    )
    assert doc["$taskid"] == [1000]
    assert doc["s"] == ["x"] and doc["b"] == [True] and doc["f"] == [1.5]
    assert doc["n"] == [] and doc["none"] == []
    assert doc["big"][0] == 2**32 and repr(Long(2**32)) == "Long(4294967296)"
    assert Document({"x": doc["big"][0]}) == Document({"x": Long(2**32)})
    assert math.isinf(doc["big"][1])
    assert doc["nested"] == [[1, None], {"Key": ["v"]}]


def test_single_item_object_and_data_document_forms() -> None:
    (doc,) = read_json('{"item": {"name": "a", "value": {"@type": "xs:long", "$": "5"}}}')
    assert repr(doc["a"][0]) == "Long(5)"
    docs = read_json('{"data": {"document": [{"item": []}, {"item": null}]}}')
    assert docs == [Document(), Document()]
    assert read_json('{"data": {"document": {"item": []}}}') == [Document()]
    assert read_json('{"data": []}') == []


def test_typed_nested_representation() -> None:
    doc = Document(
        {"$file": {"A.pdf": ["application/pdf", b"%PDF", {"size": [4]}]}, "l": [[1, None]]}
    )
    data = json.loads(to_json(doc))
    assert data == {
        "item": [
            {
                "name": "$file",
                "value": [
                    {
                        "@type": "xmlItemArray",
                        "item": [
                            {
                                "name": "A.pdf",
                                "value": [
                                    {"@type": "xs:string", "$": "application/pdf"},
                                    {"@type": "xs:base64Binary", "$": "JVBERg=="},
                                    {
                                        "@type": "xmlItemArray",
                                        "item": [
                                            {
                                                "name": "size",
                                                "value": [{"@type": "xs:int", "$": "4"}],
                                            }
                                        ],
                                    },
                                ],
                            }
                        ],
                    }
                ],
            },
            {
                "name": "l",
                "value": [{"@type": "xmlItem", "value": [{"@type": "xs:int", "$": "1"}, None]}],
            },
        ]
    }
    assert read_json(to_json(doc)) == [doc]


def test_every_type_typed_round_trip() -> None:
    doc = Document(
        {
            "all": [
                "s",
                1,
                Long(2),
                Short(3),
                Byte(4),
                BigInteger(5),
                1.25,
                Float(2.5),
                True,
                Decimal("1.10"),
                dt.datetime(2020, 5, 6, 7, 8, 9, 10000, tzinfo=dt.UTC),
                b"\x00\xff",
                math.nan,
                math.inf,
                None,
                [],
                {},
            ],
            "empty": [],
        }
    )
    (back,) = read_json(to_json(doc))
    assert back == doc
    assert to_json(back) == to_json(doc)


def test_plain_form_is_lossy_but_readable() -> None:
    when = dt.datetime(2020, 5, 6, 7, 8, 9, tzinfo=dt.UTC)
    doc = Document(
        {"a": [Long(5), Float(1.5), when, Decimal("2.5"), b"AB", math.nan, [1], {"K": 1}]}
    )
    data = json.loads(to_json(doc, typed=False))
    assert data == {
        "item": [
            {
                "name": "a",
                "value": [
                    5,
                    1.5,
                    "2020-05-06T07:08:09.000Z",
                    "2.5",
                    "QUI=",
                    "NaN",
                    [1],
                    {"K": [1]},
                ],
            }
        ]
    }
    (back,) = read_json(to_json(doc, typed=False))
    assert back["a"][0] == 5 and back["a"][-1] == {"K": [1]}


def test_collection_and_bad_values() -> None:
    doc = Document({"a": "x"})
    assert json.loads(to_json([doc, doc])) == {"data": [json.loads(to_json(doc))] * 2}
    assert json.loads(to_json(doc, collection=True))["data"][0]["item"][0]["name"] == "a"
    with pytest.raises(DocumentError, match=r"'abc' is not a valid xs:int.*item 'a'"):
        read_json('{"item": [{"name": "a", "value": {"@type": "xs:int", "$": "abc"}}]}')
    with pytest.raises(DocumentError, match="unknown value type 'ns:nope'"):
        read_json('{"item": [{"name": "a", "value": {"@type": "ns:nope", "$": "1"}}]}')
    with pytest.raises(DocumentError, match='must be an object with a "name"'):
        read_json('{"item": [{"value": 1}]}')


def test_lone_surrogate_survives() -> None:
    doc = Document({"a": "x\ud800y"})
    data = to_json(doc)
    data.decode("utf-8")  # valid UTF-8
    assert read_json(data) == [doc]


class _Generated(BinaryStream):
    """``pieces`` pieces of 1 MiB, made as they are read; ``read_all`` is not allowed."""

    def __init__(self, pieces: int) -> None:
        self.pieces = pieces

    def iter_bytes(self) -> Iterator[bytes]:
        for n in range(self.pieces):
            yield bytes([n % 256]) * (1 << 20)

    def read_all(self) -> bytes:
        raise AssertionError("a stream must not be read whole")


def test_attachments_are_written_as_a_stream() -> None:
    doc = Document({"$uniqueid": "u-1", "$file": [{"big.bin": ["application/x", _Generated(20)]}]})
    parts = list(iter_json(doc, collection=True))
    assert sum(len(part) for part in parts) > 20 * (4 << 20) // 3
    assert max(len(part) for part in parts) < 1 << 20
    [back] = read_json(b"".join(parts))
    content = back.get_values("$file")[0]["big.bin"][1]
    assert content == b"".join(_Generated(20).iter_bytes())
    plain = json.loads(b"".join(iter_json(doc, typed=False)))
    values = {item["name"]: item["value"] for item in plain["item"]}
    assert base64.b64decode(values["$file"][0]["big.bin"][1]) == content


@pytest.mark.parametrize(
    ("value", "read"),
    [
        ([None], []),
        ([[None]], [[]]),
        ([[[None]]], [[[]]]),
        ([{"a": [None]}], [{"a": []}]),
        ([[None, 1]], [[None, 1]]),
    ],
)
def test_one_nil_value_is_an_empty_list_at_every_level_as_in_xml(value: Any, read: Any) -> None:
    """Found by the fuzz test: a nested ``[null]`` read as ``[None]`` from JSON but as
    ``[]`` from the XML it writes."""
    [doc] = read_json(json.dumps({"item": [{"name": "x", "value": value}]}))
    assert doc.get_values("x") == read
    assert read_xml(to_xml(doc)) == [doc]
