"""``verify``: re-read everything and check it against its hashes and references.

Problems (corrupt or missing data) make ``verify`` fail. Warnings are facts worth knowing
that lose nothing: a document whose md5checksum was wrong, pieces no file uses, a
snapshot write or delete that died part-way (re-run it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from imixs_archive.archive.snapshot_reads import snapshot_file_keys
from imixs_archive.archive.snapshot_xml import parse_stored, read_stored, seal_row
from imixs_archive.document.conventions import METADATA_ID, modified_day, origin_id
from imixs_archive.errors import ArchiveError, IntegrityError
from imixs_archive.filestore.gc import unused_now
from imixs_archive.filestore.reading import EMPTY_MD5, pieces_digest
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_SNAPSHOT_FILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
)

SHA256_ID = re.compile(r"^[0-9a-f]{64}$")


@dataclass
class VerifyReport:
    pieces: int = 0
    files: int = 0
    snapshots: int = 0
    unverified: int = 0
    """Snapshot rows found without a digest (the Java service's, or an earlier version's):
    parsed only, then sealed (``sealed`` of them; the others changed meanwhile)."""
    sealed: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reclaimable_bytes: int = 0
    """Bytes of pieces no file uses plus those only unused files use (``gc`` frees them;
    ``filestore/gc.py``: :func:`unused_now`, as ``stats`` and ``gc`` count them)."""
    unused_files: int = 0
    """Of the files checked: those no snapshot uses."""
    unused_pieces: int = 0
    """Of the pieces checked: those only unused files use, or no file uses."""
    loose_pieces: int = 0
    """Pieces no file refers to, met in the pass over the pieces."""

    @property
    def ok(self) -> bool:
        return not self.problems


Progress = Callable[[str], None]


def verify(backend: Backend, progress: Progress | None = None) -> VerifyReport:
    report = VerifyReport()
    report.problems.extend(backend.findings())
    tick = progress or (lambda _stage: None)
    _check_pieces(backend, report, tick)
    keys = _check_snapshots(backend, report, tick)
    _check_files(backend, keys, report, tick)
    _check_incomplete(backend, report)
    unused = unused_now(backend, orphans=report.loose_pieces)
    report.unused_files, report.unused_pieces = unused.files, unused.pieces
    report.reclaimable_bytes = unused.bytes
    if report.unverified:
        report.warnings.append(
            f"{report.unverified} snapshot row(s) had no digest (written by the Java service "
            f"or an earlier version of this archive): checked as XML only; {report.sealed} "
            "sealed now, so every later read checks them"
        )
    return report


def _check_pieces(backend: Backend, report: VerifyReport, tick: Progress) -> None:
    for id_row in backend.scan(DOCUMENTS_DATA, columns=["data_id"]):
        report.pieces += 1
        tick("pieces")
        data_id = id_row["data_id"]
        try:  # one at a time: a piece that cannot be unpacked is reported, not fatal
            row = backend.get(DOCUMENTS_DATA, {"data_id": data_id})
        except IntegrityError as exc:
            report.problems.append(f"piece {data_id}: {exc}")
            continue
        if row is None:
            continue  # removed since the scan
        if SHA256_ID.match(data_id) and hashlib.sha256(row["data"]).hexdigest() != data_id:
            report.problems.append(f"piece {data_id}: bytes do not match its SHA-256")
        if (
            SHA256_ID.match(data_id)
            and next(backend.scan(ARCHIVE_PIECE_REFS, {"data_id": data_id}, limit=1), None) is None
        ):
            report.loose_pieces += 1
            report.warnings.append(
                f"piece {data_id}: no file uses it (an aborted write, or a file removed by "
                "gc: the next gc runs remove it)"
            )


def _check_snapshots(backend: Backend, report: VerifyReport, tick: Progress) -> set[str]:
    keys: set[str] = set()
    for row in _snapshot_rows(backend, report, tick):
        snapshot_id = row["snapshot"]
        try:
            stored = read_stored(backend, row)
            doc = parse_stored(snapshot_id, stored)
        except ArchiveError as exc:
            report.problems.append(f"{_named(snapshot_id)}: {_without(snapshot_id, exc)}")
            continue
        if not stored.verified:
            report.unverified += 1
            report.sealed += seal_row(backend, row, stored)
        if snapshot_id == METADATA_ID:
            continue
        try:
            day = modified_day(doc)
            origin = origin_id(snapshot_id)
        except ArchiveError as exc:
            report.problems.append(f"snapshot {snapshot_id}: unreadable: {exc}")
            continue
        for name, key in snapshot_file_keys(backend, snapshot_id, doc).items():
            keys.add(key)
            if not _file_present(backend, key):
                report.problems.append(f"snapshot {snapshot_id}: file {name!r} ({key}) is missing")
        if (
            backend.get(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": origin, "snapshot": snapshot_id})
            is None
        ):
            report.problems.append(f"snapshot {snapshot_id}: missing from snapshots_by_uniqueid")
        if backend.get(SNAPSHOTS_BY_MODIFIED, {"modified": day, "snapshot": snapshot_id}) is None:
            report.problems.append(f"snapshot {snapshot_id}: missing from snapshots_by_modified")
    return keys


def _snapshot_rows(backend: Backend, report: VerifyReport, tick: Progress) -> Iterator[Row]:
    """Every ``snapshots`` row (counted), the service state's included; one whose packed
    cell cannot be unpacked (the embedded store) is a problem named by its id, and the pass
    goes on (the ids are scanned first, then each row read on its own)."""
    for id_row in backend.scan(SNAPSHOTS, columns=["snapshot"]):
        snapshot_id = id_row["snapshot"]
        try:
            row = backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
        except IntegrityError as exc:
            row = None
            report.problems.append(f"{_named(snapshot_id)}: damaged in the store: {exc}")
        if snapshot_id != METADATA_ID:
            report.snapshots += 1
            tick("snapshots")
        if row is not None:  # else deleted since the scan, or damaged
            yield row


def _named(snapshot_id: str) -> str:
    return (
        "the service state (row '0')" if snapshot_id == METADATA_ID else f"snapshot {snapshot_id}"
    )


def _without(snapshot_id: str, exc: ArchiveError) -> str:
    """The error's message without the ``snapshot <id>: `` it starts with."""
    return str(exc).removeprefix(f"snapshot {snapshot_id}: ")


def _file_present(backend: Backend, key: str) -> bool:
    if key == EMPTY_MD5:
        return True  # no bytes to keep (the Java service stores no rows for empty content)
    if backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is not None:
        return True
    return next(backend.scan(DOCUMENTS, {"md5": key}, limit=1), None) is not None  # Java data


def _check_files(backend: Backend, keys: set[str], report: VerifyReport, tick: Progress) -> None:
    infos = {row["md5"]: row for row in backend.scan(ARCHIVE_FILES)}
    for key in sorted(keys | set(infos)):
        report.files += 1
        tick("files")
        md5, size, ids = hashlib.md5(), 0, []
        missing = False
        for row in backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"]):
            try:
                piece = backend.get(DOCUMENTS_DATA, {"data_id": row["data_id"]})
            except IntegrityError:
                report.problems.append(f"file {key}: piece {row['data_id']} is damaged")
                missing = True
                continue
            ids.append(row["data_id"])
            if piece is None:
                report.problems.append(f"file {key}: piece {row['data_id']} is missing")
                missing = True
                continue
            md5.update(piece["data"])
            size += len(piece["data"])
        if missing:
            continue
        if md5.hexdigest().upper() != key[:32]:
            report.problems.append(f"file {key}: content has MD5 {md5.hexdigest().upper()}")
        info = infos.get(key)
        if info is None:
            continue
        ours = all(SHA256_ID.match(data_id) for data_id in ids)  # else cut by the Java service
        if info["size"] != size or (ours and info["digest"] != pieces_digest(ids)):
            report.problems.append(f"file {key}: content does not match its digest or size")


def _check_incomplete(backend: Backend, report: VerifyReport) -> None:
    last = None
    for row in backend.scan(ARCHIVE_SNAPSHOT_FILES):
        snapshot_id = row["snapshot"]
        if (
            snapshot_id != last
            and backend.get(SNAPSHOTS, {"snapshot": snapshot_id}, ["snapshot"]) is None
        ):
            report.warnings.append(
                f"snapshot {snapshot_id}: a write or delete did not finish (import it again, "
                "or delete it again)"
            )
        if row["claimed_md5"] and row["claimed_md5"].upper() != row["md5"][:32]:
            report.warnings.append(
                f"snapshot {snapshot_id}: file {row['name']!r} claimed md5checksum "
                f"{row['claimed_md5']} but has MD5 {row['md5'][:32]}"
            )
        last = snapshot_id
