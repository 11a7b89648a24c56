"""The catch-up's quick scan of a syncpoint answer: the same ($uniqueid, $modified) as the
full reader, however the answer is cut into blocks, while it passes attachment text by."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.sync.catchup import _scan

_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)
_FILE = st.binary(min_size=0, max_size=3000)


@st.composite
def _snapshot(draw: st.DrawFn) -> Document:
    modified = dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
        milliseconds=draw(st.integers(0, 10**10))
    )
    doc = Document()
    doc["$uniqueid"] = f"{draw(st.uuids())}-{draw(st.integers(0, 10**13))}"
    doc["$modified"] = modified
    doc["subject"] = draw(_TEXT)  # markup, entities, multi-byte characters
    doc["note"] = [draw(_TEXT) for _ in range(draw(st.integers(0, 3)))]
    # A nested map holding an item named like the ones the scan reads: not its own.
    doc["nested"] = [{"$uniqueid": ["not-this-one"], "$modified": [draw(_TEXT)]}]
    files = {name: ["application/octet-stream", draw(_FILE), {}] for name in ("a.bin", "ü.pdf")}
    doc["$file"] = [files]
    return doc


def _expected(body: bytes) -> list[tuple[str, int]]:
    return [
        (str(doc.get_first("$uniqueid")), int(doc.get_first("$modified").timestamp() * 1000))
        for doc in read_xml(body)
    ]


def _cut(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(body)) for cut in cuts})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


@settings(max_examples=100, deadline=None)
@given(
    docs=st.lists(_snapshot(), min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 20_000), max_size=12),
)
def test_the_scan_reads_what_the_full_reader_reads_in_any_blocks(
    docs: list[Document], cuts: list[int]
) -> None:
    body = to_xml(docs, collection=True)
    assert _scan(_cut(body, cuts)) == _expected(body)


def test_text_in_cdata_and_entities_around_the_items() -> None:
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<data xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        b'xmlns:xs="http://www.w3.org/2001/XMLSchema"><document>'
        b'<item name="txt"><value xsi:type="xs:string"><![CDATA[<item name="$uniqueid">'
        b'<value xsi:type="xs:string">fake</value></item>]]> &lt;&amp; \xc3\xa9t\xc3\xa9</value>'
        b"</item>"
        b'<item name="$uniqueid"><value xsi:type="xs:string">real-&#49;</value></item>'
        b'<item name="$modified"><value xsi:type="xs:dateTime">2024-01-01T00:00:00.250Z'
        b"</value></item></document></data>"
    )
    expected = [("real-1", 1704067200250)]
    for size in range(1, 40):
        blocks = [body[n : n + size] for n in range(0, len(body), size)]
        assert _scan(blocks) == expected, size


def test_an_answer_with_a_dtd_is_left_to_the_full_reader() -> None:
    # An entity could make up the $uniqueid read: the full reader refuses the DTD.
    body = (
        b'<?xml version="1.0"?><!DOCTYPE data [<!ENTITY id "made-up">]>'
        b'<data xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><document>'
        b'<item name="$uniqueid"><value xsi:type="xs:string">&id;</value></item>'
        b'<item name="$modified"><value xsi:type="xs:dateTime">2024-01-01T00:00:00Z</value>'
        b"</item></document></data>"
    )
    assert _scan([body]) is None
