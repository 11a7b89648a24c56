"""The item-level difference between two snapshots of one process instance: what a
restore of ``restored`` would change in an instance that is at ``current`` now.

Items compare by their typed values (``model.canonical``: the same value of the same
XML schema type is equal). ``$uniqueid`` (the snapshot id, always different)
and the ``$file`` map are left out of the items; attachments are compared apart, by name,
size and stored MD5 (``md5checksum``), as "added", "removed" or "changed" files.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from imixs_archive.document.conventions import FILE_ITEM, iter_files
from imixs_archive.document.model import Document, canonical_list

LEFT_OUT = frozenset({"$uniqueid", FILE_ITEM})
"""Items not compared as items (the snapshot id differs always; files compare apart)."""
SHOWN_CHARS = 80
"""A value shown longer than this is cut (with an ellipsis)."""


@dataclass(frozen=True)
class ItemChange:
    """One item a restore changes: its values now (``current``) and after it
    (``restored``); an empty list: the item is not there."""

    name: str
    current: tuple[Any, ...]
    restored: tuple[Any, ...]

    def text(self, tz: dt.tzinfo | None = None) -> str:
        now, restored = show_values(self.current, tz), show_values(self.restored, tz)
        return f"{self.name}: {now} -> {restored}"


@dataclass(frozen=True)
class FileChange:
    """An attachment a restore brings back (``added``), drops (``removed``) or replaces
    with other content (``changed``)."""

    name: str
    change: str

    def text(self) -> str:
        return f"file {self.name}: {self.change}"


@dataclass(frozen=True)
class SnapshotDiff:
    items: tuple[ItemChange, ...]
    files: tuple[FileChange, ...]

    def lines(self, tz: dt.tzinfo | None = None) -> list[str]:
        """One line per change; times shown in ``tz`` (as stored when None)."""
        return [change.text(tz) for change in self.items] + [f.text() for f in self.files]

    def __bool__(self) -> bool:
        return bool(self.items or self.files)


def diff_snapshots(current: Document, restored: Document) -> SnapshotDiff:
    """What changes when the instance at ``current`` is restored to ``restored``."""
    names = sorted((set(current) | set(restored)) - LEFT_OUT)
    items = tuple(
        ItemChange(name, tuple(current.get_values(name)), tuple(restored.get_values(name)))
        for name in names
        if canonical_list(current.get_values(name)) != canonical_list(restored.get_values(name))
    )
    return SnapshotDiff(items, _file_changes(current, restored))


def _file_changes(current: Document, restored: Document) -> tuple[FileChange, ...]:
    now = {entry.name: (entry.size, entry.md5checksum) for entry in iter_files(current)}
    then = {entry.name: (entry.size, entry.md5checksum) for entry in iter_files(restored)}
    changes = [FileChange(name, "added") for name in then if name not in now]
    changes += [FileChange(name, "removed") for name in now if name not in then]
    changes += [
        FileChange(name, "changed") for name in then if name in now and now[name] != then[name]
    ]
    return tuple(sorted(changes, key=lambda change: change.name))


def show_values(values: tuple[Any, ...], tz: dt.tzinfo | None = None) -> str:
    """Values as an operator reads them: one value bare, several in brackets, none as
    ``(none)``; each cut at ``SHOWN_CHARS``; times in ``tz`` (as stored when None)."""
    if not values:
        return "(none)"
    shown = [_cut(_plain(value, tz)) for value in values]
    return shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"


def _plain(value: Any, tz: dt.tzinfo | None) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return (aware.astimezone(tz) if tz else aware).isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"
