"""Copy one archive into another (SQLite to Cassandra and back).

Snapshot by snapshot, files streamed from the source store through the target's chunker
and hasher. Resumable: a snapshot the target already holds completely is skipped, and one
whose copy died part-way is completed (archiving is idempotent). Verified as it goes: each
file's MD5, and its digest where the source recorded it, must match on both sides.

The archive's state travels with its snapshots (``docs/operations.md``, "Exporting to
another store"):

* **legal holds**, first (before any snapshot, so a copy that dies part-way never holds a
  held instance unprotected), with their reason, time and who placed them, also holds
  placed ahead of their data; a hold the target already has is kept;
* the **service state** (the ``'0'`` document: sync point and counts, restore progress),
  when the target has none yet;
* the **sync's records**: failed events and dead letters, snapshots gone from the
  workflow, the catch-up point and the ranges it skipped; rows the target has are kept.

A store whose own file is damaged (``archive/store_damage.py``) is exported as far as it
can be read: a snapshot that cannot be read is counted failed and named (exit 5), and when
the damage stops the walk over ``snapshots``, the rest are found by the instances' index
(``snapshots_by_uniqueid``). That is the way out of a damaged SQLite file: what export
could not read is archived again into the new store from the workflow or a backup.

What does not travel: the ledger (the target logs its own: each snapshot copied is a
stored entry, each hold a hold-placed entry, in a log of its own under its own key), the
sync's claims and each sync process's counters (they belong to running processes: stop
the sync before an export), the analytics' day figures (computed again from the
snapshots), and files and pieces no snapshot refers to (garbage the collector removes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import ArchiveError, IntegrityError, StoreError
from imixs_archive.jsonable import Jsonable
from imixs_archive.tallies import CopyFailures


@dataclass
class ExportSummary(CopyFailures, Jsonable):
    copied: int = 0
    present: int = 0
    failed: int = 0
    bytes_copied: int = 0
    failures: list[str] = field(default_factory=list)
    corrupt: int = 0
    """Of the failed: stored bytes that did not check out (an IntegrityError)."""
    holds: int = 0
    """Legal holds placed on the target (those it had are kept)."""
    sync_records: int = 0
    """The sync's records copied (failed events, dead letters, gone, catch-up progress)."""


def export(
    source: Archive, target: Archive, on_snapshot: Callable[[str], None] | None = None
) -> ExportSummary:
    summary = ExportSummary()
    summary.holds = target.holds.adopt(source.holds.list())  # first: nothing held goes bare
    damaged = _Damage(source)
    for snapshot_id in _snapshot_ids(source, damaged, summary):
        try:
            _copy(source, target, snapshot_id, summary)
        except StoreError as exc:
            if not damaged():
                raise  # a store that went away: stop, a re-run resumes
            summary.fail(snapshot_id, f"cannot be read: {exc}")
            summary.corrupt += 1
        except ArchiveError as exc:
            summary.fail(snapshot_id, exc)
        if on_snapshot is not None:
            on_snapshot(snapshot_id)
    try:
        state = source.state.load()
    except StoreError:
        if not damaged():
            raise
        state = None  # its row cannot be read: the target keeps its own
    if state is not None and len(state) and not len(target.state.load()):
        target.state.save(state)
    summary.sync_records = target.sync_records.adopt(source.sync_records)
    return summary


class _Damage:
    """Whether the source's own file is damaged (asked once, at the first failed read)."""

    def __init__(self, source: Archive) -> None:
        self._source = source
        self._found: bool | None = None

    def __call__(self) -> bool:
        if self._found is None:
            self._found = bool(self._source.storage.file_problems())
        return self._found


def _snapshot_ids(source: Archive, damaged: _Damage, summary: ExportSummary) -> Iterator[str]:
    """The ids of the stored snapshots, from ``snapshots``; when damage in the store's file
    stops that walk, the ids the instances' index holds (some again: those are there)."""
    try:
        yield from source.index.iter_snapshot_ids()
        return
    except StoreError as exc:
        if not damaged():
            raise
        summary.failures.append(
            f"the snapshots table cannot be read through ({exc}): the snapshots are found by "
            "the instances' index instead"
        )
    for ids in source.index.iter_instances():
        for snapshot_id in ids:
            try:
                stored = source.exists(snapshot_id)
            except StoreError:
                stored = True  # its row cannot be read: counted failed when it is copied
            if stored:
                yield snapshot_id


def _copy(source: Archive, target: Archive, snapshot_id: str, summary: ExportSummary) -> None:
    if target.exists(snapshot_id):
        summary.present += 1
        return
    result = target.store(source.load(snapshot_id), copy=True)
    summary.copied += 1
    summary.bytes_copied += result.logical_bytes
    expected = source.file_digests(snapshot_id)
    actual = target.file_digests(snapshot_id)
    for name, (key, digest) in expected.items():
        copied_key, copied_digest = actual.get(name, ("", None))
        if copied_key[:32] != key[:32] or (digest and digest != copied_digest):
            raise IntegrityError(
                f"file {name!r} of {snapshot_id} arrived with other content than it left "
                f"({key} -> {copied_key})"
            )
