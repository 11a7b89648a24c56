"""Imixs conventions: snapshot ids, timestamps, the ``$file`` item and number items.

A snapshot id is ``<origin uniqueid>-<epoch millis>`` (13 to 15 digits); the origin id is
everything before the last ``-``. Old keyspaces also hold ids Java's
``DataService.isSnapshotID`` accepts as "old format", ``([0-9a-f]{8}-.*|[0-9a-f]{11}-.*)``,
some without a millis suffix: those are read, listed and restored too, their origin id is
still everything before the last ``-`` (as Java indexes them) and their time is unknown (0).

``$file`` holds one map value ``filename -> [content type, content bytes, attributes map]``
(older data: the first two).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from imixs_archive.document.model import Document
from imixs_archive.errors import DocumentError
from imixs_archive.timezones import epoch_ms, from_epoch_ms

SNAPSHOT_ID = re.compile(
    r"^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}-[0-9]{13,15}$"
)
# Java's old format: legacy origin ids (``156ea588638-ba4de2b``) with or without a millis
# suffix. Java allows any character after the dash; these are limited to the characters ids
# are made of, so that an id never carries a path separator or markup.
LEGACY_SNAPSHOT_ID = re.compile(r"^(?:[0-9a-f]{8}|[0-9a-f]{11})-[0-9A-Za-z._-]*$")
_MILLIS = re.compile(r"[0-9]{1,18}")

FILE_ITEM = "$file"
DEFAULT_CONTENT_TYPE = "application/unknown"
METADATA_ID = "0"
"""The id of the service-state row the Java service keeps in the ``snapshots`` table."""


def is_snapshot_id(snapshot_id: str) -> bool:
    """True for ids of the form ``<origin uniqueid>-<epoch millis>`` (current or legacy)."""
    # fullmatch: ``$`` alone also matches before a trailing newline
    return bool(SNAPSHOT_ID.fullmatch(snapshot_id) or LEGACY_SNAPSHOT_ID.fullmatch(snapshot_id))


def require_snapshot_id(snapshot_id: str) -> str:
    """The id itself, or a ``DocumentError`` that says what a snapshot id looks like."""
    if not isinstance(snapshot_id, str) or not is_snapshot_id(snapshot_id):
        raise DocumentError(
            f"{snapshot_id!r} is not a snapshot id "
            "(expected <origin uniqueid>-<epoch millis>, e.g. "
            "270e3a6d-a0e4-4875-89f1-3b418859abe5-1519000000000)"
        )
    return snapshot_id


def origin_id(snapshot_id: str) -> str:
    """The uniqueid of the process instance a snapshot belongs to."""
    return require_snapshot_id(snapshot_id).rsplit("-", 1)[0]


def snapshot_millis(snapshot_id: str) -> int:
    """The epoch milliseconds encoded in a snapshot id; 0 for an old-format id without a
    millis suffix (it sorts before every other snapshot of its instance)."""
    suffix = require_snapshot_id(snapshot_id).rsplit("-", 1)[1]
    return int(suffix) if _MILLIS.fullmatch(suffix) else 0


def snapshot_order(snapshot_id: str) -> tuple[int, str]:
    """The one order of snapshots in time: by the epoch millis of the id, then by the id
    (a sort key)."""
    return (snapshot_millis(snapshot_id), snapshot_id)


def snapshot_time(snapshot_id: str) -> dt.datetime:
    """The creation time encoded in a snapshot id, in UTC."""
    return from_epoch_ms(snapshot_millis(snapshot_id))


EARLIEST_SNAPSHOT = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
"""No snapshot was taken before this (Imixs-Workflow's snapshots came much later)."""
CLOCK_SKEW = dt.timedelta(days=1)
"""How far after now a snapshot's time may lie (the workflow's clock ahead of ours)."""


def implausible_time(snapshot_id: str, now: dt.datetime) -> str | None:
    """Why the time in a snapshot id cannot be when the snapshot was taken (before
    :data:`EARLIEST_SNAPSHOT`, or more than :data:`CLOCK_SKEW` after ``now``), else None.
    An old-format id without a time (millis 0) has none to judge: None."""
    millis = snapshot_millis(snapshot_id)
    if millis == 0:
        return None
    try:
        when = snapshot_time(snapshot_id)
    except (OverflowError, OSError, ValueError):
        return f"its time ({millis} ms since 1970) is in the future, past the year 9999"
    if when < EARLIEST_SNAPSHOT:
        return f"its time {when.isoformat(timespec='seconds')} is before 2000"
    if when > now + CLOCK_SKEW:
        return f"its time {when.isoformat(timespec='seconds')} is in the future"
    return None


SNAPSHOT_TYPE_PREFIX = "snapshot-"
"""The type of every snapshot the workflow writes (``snapshot-workitem``, ...)."""


def not_a_snapshot(doc: Document) -> str | None:
    """Why the workflow would not take ``doc`` back as a snapshot (its ``type`` is not
    ``snapshot-...``: the engine would save a document of that type under a made-up id),
    else None. One rule for the import's warning, a restore and its dry run."""
    kind = str(doc.get_first("type", ""))
    if kind.startswith(SNAPSHOT_TYPE_PREFIX):
        return None
    return (
        f"it is not a snapshot (its type {kind!r} does not begin with "
        f"{SNAPSHOT_TYPE_PREFIX!r}): the workflow does not take it back"
    )


def make_snapshot_id(origin: str, when: dt.datetime | int) -> str:
    """``<origin>-<millis>`` for a time given as an aware datetime or epoch millis."""
    if isinstance(when, dt.datetime):
        if when.tzinfo is None:
            raise ValueError("a snapshot time must carry an offset")
        millis = epoch_ms(when)
    else:
        millis = int(when)
    return require_snapshot_id(f"{origin}-{millis}")


def modified_time(doc: Document) -> dt.datetime:
    """``$modified`` as an aware time (one without an offset is read as UTC)."""
    modified = doc.get_first("$modified")
    if not isinstance(modified, dt.datetime):
        raise DocumentError("the snapshot has no $modified date", "item '$modified'")
    return modified if modified.tzinfo is not None else modified.replace(tzinfo=dt.UTC)


def modified_day(doc: Document) -> dt.date:
    """The UTC calendar day of ``$modified``, the key of ``snapshots_by_modified``."""
    return modified_time(doc).astimezone(dt.UTC).date()


_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
)
_INT32 = (-(2**31), 2**31 - 1)


def item_integer(doc: Document, name: str) -> int:
    """The first value of an item as Java's ``ItemCollection.getItemValueInteger`` reads it:
    ``new Double(value.toString()).intValue()``, 0 when missing or not a number. So ``"3"``,
    ``3.7`` and ``" 3.0 "`` are 3, a date or ``true`` is 0, and large values saturate."""
    value = doc.get_first(name)
    if value is None or isinstance(value, bool):
        return 0
    if isinstance(value, int | float | Decimal):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip(_JAVA_BLANKS)
        if not _JAVA_DOUBLE.fullmatch(text):
            return 0
        number = float(text.rstrip("fFdD"))
    else:
        return 0
    if math.isnan(number):
        return 0
    if math.isinf(number):
        return _INT32[1] if number > 0 else _INT32[0]
    return max(_INT32[0], min(_INT32[1], int(number)))


_JAVA_BLANKS = "".join(chr(c) for c in range(33))  # String.trim(): every char <= ' '


@dataclass
class FileEntry:
    """One attachment of a ``$file`` item."""

    name: str
    content_type: str = DEFAULT_CONTENT_TYPE
    content: Any = b""
    attributes: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def md5checksum(self) -> str | None:
        """The ``md5checksum`` attribute as stored (claimed, not verified)."""
        value = _first(self.attributes.get("md5checksum"))
        return str(value) if value is not None else None

    @property
    def size(self) -> int | None:
        value = _first(self.attributes.get("size"))
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    def to_values(self) -> list[Any]:
        """The ``[content type, content, attributes]`` list stored under the file name."""
        return [self.content_type, self.content, self.attributes]


def _first(values: list[Any] | None) -> Any:
    return values[0] if values else None


def iter_files(doc: Document) -> Iterator[FileEntry]:
    """The attachments of a document, in the order of the ``$file`` map."""
    for file_map in doc.get_values(FILE_ITEM):
        if not isinstance(file_map, dict):
            raise DocumentError("$file must hold a map of file names", "item '$file'")
        for name, values in file_map.items():
            yield _entry(name, values)


def _entry(name: str, values: list[Any]) -> FileEntry:
    where = f"item '$file', file {name!r}"
    if not isinstance(values, list) or not values:
        raise DocumentError("a file entry must hold [content type, content, ...]", where)
    content_type = values[0] if isinstance(values[0], str) and values[0] else DEFAULT_CONTENT_TYPE
    content = values[1] if len(values) > 1 else b""
    attributes = values[2] if len(values) > 2 else {}
    if not isinstance(attributes, dict):
        raise DocumentError("file attributes must be a map", where)
    return FileEntry(name, content_type, content, attributes)


def get_file(doc: Document, name: str) -> FileEntry | None:
    """The attachment with this exact (case-kept) name, or None."""
    for entry in iter_files(doc):
        if entry.name == name:
            return entry
    return None


def set_files(doc: Document, files: list[FileEntry]) -> None:
    """Replace ``$file`` with these entries and update ``$file.count`` / ``$file.names``."""
    if not files:
        for item in (FILE_ITEM, "$file.count", "$file.names"):
            doc.pop(item, None)
        return
    doc[FILE_ITEM] = [{entry.name: entry.to_values() for entry in files}]
    doc["$file.count"] = [len(files)]
    doc["$file.names"] = [entry.name for entry in files]
