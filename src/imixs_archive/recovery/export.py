"""Copy one archive into another (SQLite to Cassandra and back).

Snapshot by snapshot, files streamed from the source store through the target's chunker
and hasher. Resumable: a snapshot the target already holds completely is skipped, and one
whose copy died part-way is completed (archiving is idempotent). Verified as it goes: each
file's MD5, and its digest where the source recorded it, must match on both sides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import ArchiveError, IntegrityError, StoreError


@dataclass
class ExportSummary:
    copied: int = 0
    present: int = 0
    failed: int = 0
    bytes_copied: int = 0
    failures: list[str] = field(default_factory=list)
    corrupt: int = 0
    """Of the failed: stored bytes that did not check out (an IntegrityError)."""


def export(
    source: Archive, target: Archive, on_snapshot: Callable[[str], None] | None = None
) -> ExportSummary:
    summary = ExportSummary()
    for snapshot_id in source.iter_snapshot_ids():
        try:
            _copy(source, target, snapshot_id, summary)
        except StoreError:
            raise  # a store that went away: stop, a re-run resumes
        except ArchiveError as exc:
            summary.failed += 1
            summary.corrupt += isinstance(exc, IntegrityError)
            summary.failures.append(f"{snapshot_id}: {exc}")
        if on_snapshot is not None:
            on_snapshot(snapshot_id)
    state = source.state.load()
    if len(state) and not len(target.state.load()):
        target.state.save(state)
    return summary


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
