"""A snapshot's XML with its files from the stored XML as it is: the same bytes as
loading it and writing it again, and no answer for XML whose shape it cannot vouch for."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.stored_xml import load_with_files, with_files
from imixs_archive.document.model import BinaryStream, Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import IntegrityError, NotFoundError
from imixs_archive.storage.model import DOCUMENTS_DATA
from support.snapshots import make_snapshot

_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=30)
_SCALAR = st.one_of(
    _TEXT,
    st.integers(-(2**31), 2**31 - 1),
    st.booleans(),
    st.binary(max_size=40),
    st.datetimes(timezones=st.just(dt.UTC)),
    st.none(),
)
_VALUES = st.lists(
    st.one_of(_SCALAR, st.dictionaries(_TEXT, st.lists(_SCALAR, max_size=3), max_size=3)),
    max_size=3,
)
_NAMES = _TEXT.filter(lambda name: name.strip() != "" and not name.strip().startswith("$"))


@st.composite
def _snapshots(draw: st.DrawFn) -> Document:
    """A snapshot with random items (some named like the ones the pass reads, nested or
    in other case) and random files, some empty, some with attributes."""
    doc = make_snapshot(draw(st.integers(0, 1000)))
    for name in draw(st.lists(_NAMES, max_size=4)):  # not the snapshot's own items
        doc[name] = draw(_VALUES)
    doc["nested"] = [{"$file": [draw(_TEXT)], "$created": draw(_VALUES)}]
    doc["Other"] = [draw(st.binary(max_size=20))]
    files = {
        name: [draw(_TEXT), draw(st.binary(max_size=3000)), draw(st.dictionaries(_TEXT, _VALUES))]
        for name in draw(st.lists(_TEXT.filter(str.strip), max_size=4, unique=True))
    }
    if files or draw(st.booleans()):
        doc["$file"] = [files]
    if draw(st.booleans()):
        del doc["$created"]  # the folder from $modified then
    return doc


def _spliced(archive: Archive, snapshot_id: str) -> bytes | None:
    """The stored XML with the files spliced in; None: not in a shape the pass takes."""
    stored = load_with_files(archive.backend, archive.files, archive.read_gate, snapshot_id)
    return None if stored is None else b"".join(stored.iter_bytes())


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=_snapshots())
def test_the_same_bytes_as_loading_and_writing_again(archive: Archive, doc: Document) -> None:
    snapshot_id = f"{uuid.uuid4()}-{doc.get_first('$uniqueid')[-13:]}"  # new in every example
    doc["$uniqueid"] = snapshot_id
    archive.store(doc)
    spliced = _spliced(archive, snapshot_id)
    loaded = archive.load(snapshot_id)
    files = doc.get_values("$file")[0] if "$file" in doc else {}
    if all(len(values[1]) for values in files.values()):  # an empty file is not stored
        assert spliced is not None
    if spliced is not None:
        assert spliced == to_xml(loaded)
    either = archive.xml_with_files(snapshot_id)  # spliced, or written from the loaded one
    assert b"".join(either.iter_bytes()) == to_xml(loaded)
    assert either.created == (doc.get_first("$created") or doc.get_first("$modified"))


def test_a_piece_that_does_not_check_out_fails_the_read(archive: Archive) -> None:
    archive.store(make_snapshot(0, files={"a.pdf": bytes(range(256)) * 400}))
    row = next(archive.backend.scan(DOCUMENTS_DATA))
    archive.backend.put(
        DOCUMENTS_DATA, [{"data_id": row["data_id"], "data": b"X" + row["data"][1:]}]
    )
    snapshot_id = str(make_snapshot(0).get_first("$uniqueid"))
    stored = load_with_files(archive.backend, archive.files, archive.read_gate, snapshot_id)
    assert stored is not None
    with pytest.raises(IntegrityError, match=r"'a\.pdf'"):
        b"".join(stored.iter_bytes())


def test_a_snapshot_not_stored_is_not_found(archive: Archive) -> None:
    with pytest.raises(NotFoundError):
        archive.xml_with_files(str(make_snapshot(0).get_first("$uniqueid")))


class _Bytes(BinaryStream):
    def __init__(self, data: bytes) -> None:
        self.data = data

    @property
    def size(self) -> int:
        return len(self.data)

    def iter_bytes(self) -> Any:
        yield self.data


def _with(xml: bytes, keys: dict[str, str] | None = None) -> bytes | None:
    found = with_files(xml, keys or {"a.pdf": "K"}, lambda _name, _key: _Bytes(b"abc"))
    return None if found is None else b"".join(found.iter_bytes())


FILE = b'<item name="$file">'
_CANONICAL = to_xml(make_snapshot(0, files={"a.pdf": b""}))


def test_the_content_goes_where_it_was_emptied() -> None:
    assert _CANONICAL.count(b'Binary"></value>') == 1
    assert _with(_CANONICAL) == _CANONICAL.replace(b'Binary"></value>', b'Binary">YWJj</value>')


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # namespaces declared otherwise (the Java service's writer, another prefix)
        (b' xmlns:xs="http://www.w3.org/2001/XMLSchema"', b""),
        (b"<document ", b"<document xmlns:a='urn:a' "),
        (b'<item name="$file">', b'<item name="$file" xmlns:xsi="urn:other">'),
        # a DTD: an entity could make up what the pass reads
        (b"<document ", b'<!DOCTYPE document [<!ENTITY e "x">]>\n<document '),
        # content kept in the stored XML, or written another way
        (b'Binary"></value>', b'Binary">YWJj</value>'),
        (b'<value xsi:type="xs:base64Binary"></value>', b'<value xsi:type="xs:base64Binary"/>'),
        # the file item or an entry twice (the reader keeps the last one)
        (
            b'<item name="$file">',
            b'<item name="$FILE"><value xsi:type="xmlItemArray"/></item><item name="$file">',
        ),
        (b'<item name="a.pdf">', b'<item name="a.pdf"></item><item name="a.pdf">'),
        # a second value of the file item, a $created that is not a dateTime
        (b"        </value>\n    </item>", b'</value><value xsi:type="xmlItemArray"/></item>'),
        (b'<value xsi:type="xs:dateTime">', b'<value xsi:type="xs:string">'),
        # an element the reader refuses, a collection
        (b'<item name="$file">', b'<other/><item name="$file">'),
        (b"<document ", b"<data><document "),
    ],
)
def test_xml_of_another_shape_is_left_to_the_reader(old: bytes, new: bytes) -> None:
    assert old in _CANONICAL
    changed = _CANONICAL.replace(old, new, 1)
    if new.startswith(b"<data>"):
        changed = changed.replace(b"</document>", b"</document></data>")
    assert _with(changed) is None


def test_a_file_without_a_recorded_key_is_left_to_the_reader() -> None:
    assert _with(_CANONICAL, {"other.pdf": "K"}) is None
