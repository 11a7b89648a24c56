"""A snapshot's XML with its files, written from its stored XML as it is.

The ``snapshots`` row holds the snapshot's XML with each file's content emptied:
``<value xsi:type="xs:base64Binary"></value>`` as the second value of each entry of the
``$file`` item. Reading a snapshot whole (``Archive.load``) parses that XML into a
``Document`` and a writer makes XML of it again; for a backup that is most of the work
besides the attachments (parsing and writing 14 KB of items cost more than encoding a
megabyte of base64). Here the stored bytes pass through as they are and each stored
file's base64 goes in where its content was emptied: the same bytes a parse and a write
give for XML this archive wrote (its writer is canonical), and the same document for any
XML.

One light pass of expat (no namespace processing, no values built) finds where the
contents go and reads ``$created`` / ``$modified``. It takes only XML whose shape it can
vouch for, and answers None for anything else, so the caller takes the full path: a
root other than ``<document>`` with this writer's namespace declarations, namespace
declarations below the root, a DTD, more than one ``$file`` item or value, file entries
sharing a name, an entry whose content is anything but an empty base64 value, or a file
whose stored key this archive did not record (the Java service's snapshots: their keys
are read from the items).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from xml.parsers import expat

from imixs_archive.archive.read_gate import ReadGate
from imixs_archive.archive.snapshot_xml import snapshot_xml, xml_size
from imixs_archive.document.base64_stream import iter_base64
from imixs_archive.document.lexical import parse_datetime
from imixs_archive.document.model import BinaryStream, normalize_name
from imixs_archive.document.xml_scan import DoctypeRefused, scanner
from imixs_archive.errors import DocumentError, NotFoundError
from imixs_archive.filestore.store import FileStore
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_SNAPSHOT_FILES, SNAPSHOTS

ROOT = (
    b'<document xmlns:xs="http://www.w3.org/2001/XMLSchema" '
    b'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
)
EMPTIED = b'<value xsi:type="xs:base64Binary"></value>'
CONTENT_AT = len(b'<value xsi:type="xs:base64Binary">')
MAP = b'<value xsi:type="xmlItemArray"'
DATE = b'<value xsi:type="xs:dateTime">'
FILE_ITEM = "$file"
DATE_ITEMS = ("$created", "$modified")


@dataclass
class StoredXml:
    """The XML of one snapshot with its files: byte runs of the stored XML, and between
    them the files whose base64 goes there (streamed, checked as read); or the pieces of
    a writer's XML of the loaded snapshot."""

    created: dt.datetime | None
    """``$created`` (``$modified`` when it has none): a backup's folder."""
    parts: list[bytes | BinaryStream | Iterator[bytes]]

    def iter_bytes(self) -> Iterator[bytes]:
        for part in self.parts:
            if isinstance(part, bytes):
                yield part
            elif isinstance(part, BinaryStream):
                yield from iter_base64(part.iter_bytes())
            else:
                yield from part


class _NotVouched(Exception):
    """The XML is not in a shape this pass takes: the caller parses it whole."""


def with_files(
    data: bytes, keys: Mapping[str, str], content: Callable[[str, str], BinaryStream]
) -> StoredXml | None:
    """``data`` (a ``snapshots`` row's XML) with the files spliced in: ``keys`` maps file
    names to stored keys, ``content(name, key)`` gives a file's bytes. None when the XML
    is not in a shape this module vouches for (see the module's text)."""
    if not data.lstrip().startswith(b"<?xml") and not data.lstrip().startswith(b"<document"):
        return None
    scan = _Scan(data, keys)
    try:
        scan.run()
    except (_NotVouched, DoctypeRefused, expat.ExpatError, DocumentError, ValueError):
        return None
    created = scan.dates.get("$created") or scan.dates.get("$modified")
    if created is None:
        return None
    parts: list[bytes | BinaryStream | Iterator[bytes]] = []
    start = 0
    for offset, name in scan.contents:
        parts.append(data[start:offset])
        parts.append(content(name, keys[name]))
        start = offset
    parts.append(data[start:])
    return StoredXml(created, parts)


class _Scan:
    """Where the contents of the ``$file`` entries go, and the two dates."""

    def __init__(self, data: bytes, keys: Mapping[str, str]) -> None:
        self.data = data
        self.keys = keys
        self.contents: list[tuple[int, str]] = []
        """(offset of the content, file name), in the order of the XML."""
        self.dates: dict[str, dt.datetime] = {}
        self._path: list[str] = []
        """The open elements' roles: ``root``, ``item``, ``file``, ``map``, ``entry``,
        ``date:<name>`` (a date item), ``value``, ``date`` (a date item's first value)."""
        self._file_items = 0
        self._seen_entries: set[str] = set()
        self._entry = ""
        self._file_values = 0
        self._entry_values = 0
        self._date_text: list[str] = []
        self._parser = scanner(self._start, self._end, self._text)

    def run(self) -> None:
        self._parser.Parse(self.data, True)

    def _at(self, tag: bytes) -> bool:
        """Whether the element starting now is written exactly so."""
        return self.data.startswith(tag, self._parser.CurrentByteIndex)

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        path = self._path
        if not path:
            if tag != "document" or not self._at(ROOT):
                raise _NotVouched
            path.append("root")
            return
        if tag not in ("item", "value") or any(name.startswith("xmlns") for name in attrs):
            raise _NotVouched  # the reader refuses it, or reads names in other ways
        parent = path[-1]
        if parent == "root":
            path.append(self._top_item(normalize_name(attrs.get("name", ""))))
        elif parent == "file":
            self._file_values += 1
            if self._file_values > 1 or not self._at(MAP):
                raise _NotVouched
            path.append("map")
        elif parent == "map":
            self._start_entry(attrs.get("name"))
        elif parent == "entry":
            self._entry_value()
        elif parent.startswith("date:"):
            self._date_value(parent.removeprefix("date:"))
        else:
            path.append("value" if tag == "value" else "item")

    def _top_item(self, name: str) -> str:
        if name == FILE_ITEM:
            self._file_items += 1
            if self._file_items > 1:
                raise _NotVouched  # the item twice: the reader keeps the last one
            return "file"
        if name in DATE_ITEMS:
            if name in self.dates:
                raise _NotVouched
            return "date:" + name
        return "item"

    def _start_entry(self, name: str | None) -> None:
        if name is None or name in self._seen_entries:
            raise _NotVouched  # two entries of one name: the reader keeps the last one
        self._seen_entries.add(name)
        self._entry = name
        self._entry_values = 0
        self._path.append("entry")

    def _entry_value(self) -> None:
        self._entry_values += 1
        self._path.append("value")
        if self._entry_values != 2:
            return
        if self._entry not in self.keys or not self._at(EMPTIED):
            raise _NotVouched  # another key lookup, or content the reader keeps
        self.contents.append((self._parser.CurrentByteIndex + CONTENT_AT, self._entry))

    def _date_value(self, name: str) -> None:
        if name in self.dates:  # a later value of the item
            self._path.append("value")
            return
        if not self._at(DATE):
            raise _NotVouched
        self._path.append("date")

    def _text(self, text: str) -> None:
        if self._path and self._path[-1] == "date":
            self._date_text.append(text)

    def _end(self, _tag: str) -> None:
        role = self._path.pop()
        if role == "date":
            name = self._path[-1].removeprefix("date:")
            self.dates[name] = parse_datetime("".join(self._date_text))
            self._date_text = []


def load_with_files(
    backend: Backend, files: FileStore, gate: ReadGate, snapshot_id: str
) -> StoredXml | None:
    """The stored snapshot's XML with its files (``with_files``); None when its XML is
    not in a shape this module vouches for. NotFoundError when it is not stored."""
    row = backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    if row is None:
        raise NotFoundError(f"snapshot {snapshot_id} is not in the archive")
    weight = gate.acquire(xml_size(row))  # large rows share a budget, as in load
    try:
        data = snapshot_xml(backend, row)  # checked: with_files passes it on as it is
        keys = {
            stored["name"]: stored["md5"]
            for stored in backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id})
        }

        def content(name: str, key: str) -> BinaryStream:
            return files.content(key, where=f"snapshot {snapshot_id}, file {name!r}")

        found = with_files(data, keys, content)
    except BaseException:
        gate.release(weight)
        raise
    if found is None:
        gate.release(weight)
    else:
        gate.release_with(found, weight)
    return found
