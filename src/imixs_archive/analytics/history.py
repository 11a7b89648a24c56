"""The history of one process instance: its snapshots in order, the time between steps,
the items that changed and the files added, replaced or removed from one step to the next.

Times are those of the snapshot ids (the epoch millis of each save, UTC). Files are
compared by name and stored key: same name with another key is ``replaced``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import iter_files, snapshot_time
from imixs_archive.document.labels import label
from imixs_archive.document.model import Document, canonical_list
from imixs_archive.document.plain import plain
from imixs_archive.errors import NotFoundError
from imixs_archive.jsonable import Jsonable
from imixs_archive.timezones import zone_label

DEFAULT_IGNORED = frozenset({"$uniqueid", "$modified", "$file"})
"""Items left out of the item changes: they change on every save, or (``$file``) are
reported as file changes."""


@dataclass
class ItemChange:
    name: str
    kind: str
    """``added``, ``removed`` or ``changed``."""
    old: list[Any]
    new: list[Any]

    # Own JSON: item values as plain JSON (``plain``), not as stored.
    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "old": plain(self.old),
            "new": plain(self.new),
        }


@dataclass
class FileChange(Jsonable):
    name: str
    kind: str
    """``added``, ``replaced`` or ``removed``."""
    key: str | None
    previous_key: str | None
    size: int | None


@dataclass
class HistoryStep:
    index: int
    snapshot_id: str
    time: dt.datetime
    since_previous: float | None
    """Seconds since the previous snapshot (None for the first)."""
    task: str
    status: str
    items: list[ItemChange] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)

    # Own JSON: times in the zone asked for, to the millisecond.
    def to_json(self, tz: dt.tzinfo = dt.UTC) -> dict[str, Any]:
        return {
            "index": self.index,
            "snapshot": self.snapshot_id,
            "time": self.time.astimezone(tz).isoformat(timespec="milliseconds"),
            "since_previous": self.since_previous,
            "task": self.task,
            "status": self.status,
            "items": [change.to_json() for change in self.items],
            "files": [change.to_json() for change in self.files],
        }


@dataclass
class InstanceHistory:
    uniqueid: str
    steps: list[HistoryStep]

    @property
    def duration(self) -> float:
        """Seconds from the first to the last snapshot."""
        return (self.steps[-1].time - self.steps[0].time).total_seconds() if self.steps else 0.0

    # Own JSON: times in the zone asked for; counts and duration derived.
    def to_json(self, tz: dt.tzinfo = dt.UTC) -> dict[str, Any]:
        """Times in ``tz``, named as ``tz``."""
        return {
            "uniqueid": self.uniqueid,
            "snapshots": len(self.steps),
            "duration": self.duration,
            "tz": zone_label(tz),
            "steps": [step.to_json(tz) for step in self.steps],
        }


def instance_history(
    archive: Archive, uniqueid: str, *, ignore: frozenset[str] = DEFAULT_IGNORED
) -> InstanceHistory:
    """The whole history of one process instance (NotFoundError when it has none)."""
    steps = list(iter_history(archive, uniqueid, ignore=ignore))
    if not steps:
        raise NotFoundError(f"process instance {uniqueid} has no snapshots in the archive")
    return InstanceHistory(uniqueid, steps)


def iter_history(
    archive: Archive, uniqueid: str, *, ignore: frozenset[str] = DEFAULT_IGNORED
) -> Iterator[HistoryStep]:
    """The steps one by one, oldest first; holds two snapshots (without file contents)."""
    previous: tuple[Document, dict[str, str], dt.datetime] | None = None
    ids = archive.list_instance(uniqueid.strip(), newest_first=False)
    for index, snapshot_id in enumerate(ids):
        doc = archive.load(snapshot_id, with_files=False)
        keys = archive.index.file_keys(snapshot_id, doc)
        when = snapshot_time(snapshot_id)
        step = HistoryStep(
            index=index,
            snapshot_id=snapshot_id,
            time=when,
            since_previous=None,
            task=label(doc.get_first("$taskid")),
            status=label(doc.get_first("$workflowstatus")),
        )
        if previous is None:
            step.files = _file_changes({}, keys, doc)
        else:
            old_doc, old_keys, old_time = previous
            step.since_previous = (when - old_time).total_seconds()
            step.items = item_changes(old_doc, doc, ignore)
            step.files = _file_changes(old_keys, keys, doc)
        previous = (doc, keys, when)
        yield step


def item_changes(old: Document, new: Document, ignore: frozenset[str]) -> list[ItemChange]:
    """Items added, removed or with other (typed) values, by name."""
    changes: list[ItemChange] = []
    for name in sorted(set(old) | set(new)):
        if name in ignore:
            continue
        before, after = old.get_values(name), new.get_values(name)
        if name not in old:
            changes.append(ItemChange(name, "added", [], after))
        elif name not in new:
            changes.append(ItemChange(name, "removed", before, []))
        elif canonical_list(before) != canonical_list(after):
            changes.append(ItemChange(name, "changed", before, after))
    return changes


def _file_changes(old: dict[str, str], new: dict[str, str], doc: Document) -> list[FileChange]:
    sizes = {entry.name: entry.size for entry in iter_files(doc)}
    changes: list[FileChange] = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            changes.append(FileChange(name, "added", new[name], None, sizes.get(name)))
        elif name not in new:
            changes.append(FileChange(name, "removed", None, old[name], None))
        elif old[name] != new[name]:
            changes.append(FileChange(name, "replaced", new[name], old[name], sizes.get(name)))
    return changes
