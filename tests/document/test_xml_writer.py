"""The streaming XML writer: exact bytes, escaping, streams, pieces."""

from __future__ import annotations

import datetime as dt
import io
import os
from collections.abc import Iterator
from decimal import Decimal

import pytest

from imixs_archive.document.model import (
    BigInteger,
    BinaryStream,
    Byte,
    Document,
    Float,
    Long,
    Short,
)
from imixs_archive.document.xml_reader import read_xml, read_xml_document
from imixs_archive.document.xml_writer import PIECE_SIZE, iter_xml, to_xml, write_xml
from imixs_archive.errors import DocumentError

HEAD = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<document xmlns:xs="http://www.w3.org/2001/XMLSchema" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
)


class PiecesStream(BinaryStream):
    """A stream in odd-sized pieces that refuses to be read whole."""

    def __init__(self, data: bytes, piece: int) -> None:
        self.data = data
        self.piece = piece
        self.reads = 0

    def iter_bytes(self) -> Iterator[bytes]:
        self.reads += 1
        for start in range(0, len(self.data), self.piece):
            yield self.data[start : start + self.piece]

    def read_all(self) -> bytes:
        raise AssertionError("the writer must not read a stream whole")


def test_known_answer_every_type() -> None:
    plus_one = dt.timezone(dt.timedelta(hours=1))
    doc = Document(
        {
            "$uniqueid": "270e3a6d-a0e4-4875-89f1-3b418859abe5",
            "b": [True, False],
            "num": [1000, Long(5), Short(-3), Byte(7), BigInteger(10**20), 2.5, Float(0.5)],
            "dec": Decimal("12.50"),
            "when": dt.datetime(2018, 2, 18, 22, 36, 25, 72000, tzinfo=plus_one),
            "bin": b"ABC",
            "empty": [],
            "list": [[1, None, "x"]],
            "$file": {"Invoice.PDF": ["application/pdf", b"%PDF", {"size": [4]}]},
        }
    )
    expected = HEAD + (
        '    <item name="$file">\n'
        '        <value xsi:type="xmlItemArray">\n'
        '            <item name="Invoice.PDF">\n'
        '                <value xsi:type="xs:string">application/pdf</value>\n'
        '                <value xsi:type="xs:base64Binary">JVBERg==</value>\n'
        '                <value xsi:type="xmlItemArray">\n'
        '                    <item name="size">\n'
        '                        <value xsi:type="xs:int">4</value>\n'
        "                    </item>\n"
        "                </value>\n"
        "            </item>\n"
        "        </value>\n"
        "    </item>\n"
        '    <item name="$uniqueid">\n'
        '        <value xsi:type="xs:string">270e3a6d-a0e4-4875-89f1-3b418859abe5</value>\n'
        "    </item>\n"
        '    <item name="b">\n'
        '        <value xsi:type="xs:boolean">true</value>\n'
        '        <value xsi:type="xs:boolean">false</value>\n'
        "    </item>\n"
        '    <item name="bin">\n'
        '        <value xsi:type="xs:base64Binary">QUJD</value>\n'
        "    </item>\n"
        '    <item name="dec">\n'
        '        <value xsi:type="xs:decimal">12.50</value>\n'
        "    </item>\n"
        '    <item name="empty">\n'
        '        <value xsi:nil="true"/>\n'
        "    </item>\n"
        '    <item name="list">\n'
        '        <value xsi:type="xmlItem">\n'
        '            <value xsi:type="xs:int">1</value>\n'
        '            <value xsi:nil="true"/>\n'
        '            <value xsi:type="xs:string">x</value>\n'
        "        </value>\n"
        "    </item>\n"
        '    <item name="num">\n'
        '        <value xsi:type="xs:int">1000</value>\n'
        '        <value xsi:type="xs:long">5</value>\n'
        '        <value xsi:type="xs:short">-3</value>\n'
        '        <value xsi:type="xs:byte">7</value>\n'
        '        <value xsi:type="xs:integer">100000000000000000000</value>\n'
        '        <value xsi:type="xs:double">2.5</value>\n'
        '        <value xsi:type="xs:float">0.5</value>\n'
        "    </item>\n"
        '    <item name="when">\n'
        '        <value xsi:type="xs:dateTime">2018-02-18T22:36:25.072+01:00</value>\n'
        "    </item>\n"
        "</document>\n"
    )
    assert to_xml(doc).decode() == expected
    assert read_xml_document(to_xml(doc)) == doc


def test_empty_lists_written_as_nil_at_every_level() -> None:
    # Java's XMLItem.setValue turns [] into [null]; an item or nested list without any value
    # makes XMLItem.transformValue throw a NullPointerException (tests/document/test_java_compat)
    doc = Document({"m": [{"e": []}], "l": [[]], "top": []})
    nil = '<value xsi:nil="true"/>'
    assert to_xml(doc).decode().split("\n")[2:-2] == [
        '    <item name="l">',
        '        <value xsi:type="xmlItem">',
        f"            {nil}",
        "        </value>",
        "    </item>",
        '    <item name="m">',
        '        <value xsi:type="xmlItemArray">',
        '            <item name="e">',
        f"                {nil}",
        "            </item>",
        "        </value>",
        "    </item>",
        '    <item name="top">',
        f"        {nil}",
        "    </item>",
    ]
    assert read_xml_document(to_xml(doc)) == doc


def test_collection_root_and_forms() -> None:
    doc = Document({"a": "x"})
    data = to_xml([doc, doc]).decode()
    assert data.startswith(
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<data xmlns:xs='
    )
    assert data.count("<document>") == 2 and data.endswith("</data>\n")
    assert read_xml(to_xml(doc, collection=True)) == [doc]
    assert to_xml([doc], collection=False) == to_xml(doc)
    assert (
        to_xml([])
        .decode()
        .endswith(
            '<data xmlns:xs="http://www.w3.org/2001/XMLSchema" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"/>\n'
        )
    )
    assert read_xml(to_xml([])) == []
    assert read_xml_document(to_xml(Document())) == Document()
    with pytest.raises(DocumentError, match="more than one"):
        to_xml([doc, doc], collection=False)


def test_escaping_and_invalid_characters() -> None:
    doc = Document(
        {
            "text": [
                "a & b < c > d \"q\" 's'",
                "bell\x07 nul\x00 ok\ufffe\uffff",
                "cr\r\nlf",
                "]]>",
            ],
            "$file": {'We "ird" <&>\tname\n.txt': ["text/plain"]},
        }
    )
    data = to_xml(doc)
    assert b"a &amp; b &lt; c &gt; d \"q\" 's'" in data
    assert b'name="We &quot;ird&quot; &lt;&amp;&gt;&#9;name&#10;.txt"' in data
    assert b"\x07" not in data and b"\x00" not in data
    back = read_xml_document(data)
    assert back["text"] == ["a & b < c > d \"q\" 's'", "bell nul ok", "cr\r\nlf", "]]>"]
    assert list(back["$file"][0]) == ['We "ird" <&>\tname\n.txt']


def test_lone_surrogates_dropped() -> None:
    data = to_xml(Document({"a": "x\ud800y"}))
    assert read_xml_document(data)["a"] == ["xy"]


def test_binary_stream_encoded_in_pieces() -> None:
    payload = os.urandom(300_007)
    stream = PiecesStream(payload, 1001)
    doc = Document({"$file": {"a.bin": ["application/octet-stream", stream]}})
    pieces = list(iter_xml(doc))
    assert stream.reads == 1
    assert max(len(p) for p in pieces) <= PIECE_SIZE + PIECE_SIZE // 4
    back = read_xml_document(b"".join(pieces))
    assert back["$file"][0]["a.bin"][1] == payload
    assert back == doc  # typed equality hashes the stream's bytes


def test_pieces_are_large_for_many_small_documents() -> None:
    docs = [Document({"n": i, "b": b"xyz"}) for i in range(3000)]
    pieces = list(iter_xml(docs))
    assert all(len(p) >= PIECE_SIZE for p in pieces[:-1])
    assert len(read_xml(b"".join(pieces))) == 3000


def test_write_xml_counts_bytes() -> None:
    out = io.BytesIO()
    doc = Document({"a": "x"})
    assert write_xml(doc, out) == len(out.getvalue()) == len(to_xml(doc))


def test_out_of_range_value_names_the_item() -> None:
    with pytest.raises(DocumentError, match=r"out of range for xs:byte.*item 'small'"):
        to_xml(Document({"small": Byte(1000)}))


def test_generator_input_streams_documents() -> None:
    made = []

    def docs() -> Iterator[Document]:
        for i in range(200):
            made.append(i)
            yield Document({"n": i, "pad": "p" * 1000})

    first = next(iter_xml(docs()))
    assert len(made) < 200 and first.startswith(b"<?xml")
