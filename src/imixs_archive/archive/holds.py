"""Legal holds (``archive_legal_holds``) and the reads retention needs.

A hold is one row per process instance and case (its reason): placing it is a single
upsert, releasing it a single delete, so two operators never lose each other's holds and
holds for different cases stack: an instance stays held while any is placed. A hold an
earlier version placed (one row per instance, ``archive_legal_holds``) still holds, its
reason its case. Retention
(``services/retention.py``) deletes no snapshot of a held instance.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from imixs_archive.archive import snapshot_reads as reads
from imixs_archive.document.conventions import (
    is_snapshot_id,
    iter_files,
    origin_id,
    snapshot_millis,
)
from imixs_archive.errors import ConfigError, NotFoundError
from imixs_archive.filestore.garbage import PIN
from imixs_archive.filestore.reading import EMPTY_MD5
from imixs_archive.jsonable import Jsonable
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.entries import HOLD_PLACED, HOLD_RELEASED, Entry
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_LEGAL_HOLD_CASES,
    ARCHIVE_LEGAL_HOLDS,
    ARCHIVE_SNAPSHOT_FILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_UNIQUEID,
)
from imixs_archive.timezones import epoch_ms, from_epoch_ms, now_ms

NO_REASON = "(no reason given)"


@dataclass(frozen=True)
class Hold(Jsonable):
    uniqueid: str
    reason: str
    placed: dt.datetime
    placed_by: str


def place_hold(
    backend: Backend, uniqueid: str, reason: str, placed_by: str, now: dt.datetime
) -> Hold:
    """Place the hold of one case (its reason) on a process instance: one upsert; the
    holds of other cases stay."""
    hold = Hold(uniqueid.strip(), reason.strip(), now.astimezone(dt.UTC), placed_by)
    if not hold.uniqueid:
        raise ConfigError("give the $uniqueid of the process instance to hold")
    if not hold.reason:
        raise ConfigError("give the reason of the hold (its case: a case number, a court order)")
    row = {
        "uniqueid": hold.uniqueid,
        "reason": hold.reason,
        "placed": epoch_ms(hold.placed),
        "placed_by": hold.placed_by,
    }
    backend.put(ARCHIVE_LEGAL_HOLD_CASES, [row])
    return hold


def _hold(row: dict[str, Any]) -> Hold:
    placed = from_epoch_ms(int(row["placed"] or 0))
    return Hold(row["uniqueid"], row["reason"] or "", placed, row["placed_by"] or "")


def _legacy(backend: Backend, uniqueid: str) -> Hold | None:
    """The hold a version before store version 5 placed (one per instance), if any."""
    row = backend.get(ARCHIVE_LEGAL_HOLDS, {"uniqueid": uniqueid})
    return None if row is None else _hold(dict(row))


def hold_rows(backend: Backend, uniqueid: str) -> list[tuple[Hold, bool]]:
    """Every hold of a process instance, each with whether it is an old-style row (of
    ``archive_legal_holds``): oldest first."""
    key = {"uniqueid": uniqueid.strip()}
    rows = [(_hold(dict(row)), False) for row in backend.scan(ARCHIVE_LEGAL_HOLD_CASES, key)]
    legacy = _legacy(backend, key["uniqueid"])
    if legacy is not None:
        rows.append((legacy, True))
    return sorted(rows, key=lambda r: (r[0].placed, r[0].reason, r[1]))


def holds_of(backend: Backend, uniqueid: str) -> list[Hold]:
    """The holds of a process instance, one per case, oldest first."""
    seen: dict[str, Hold] = {}
    for hold, _old in hold_rows(backend, uniqueid):
        seen.setdefault(hold.reason, hold)
    return list(seen.values())


def release_hold(backend: Backend, uniqueid: str, reason: str | None = None) -> bool:
    """Remove the hold of one case (``reason``; None: every hold of the instance); False
    when there was none."""
    target = uniqueid.strip()
    found = False
    for hold, old in hold_rows(backend, target):
        if reason is not None and hold.reason != reason.strip():
            continue
        found = True
        if old:
            backend.delete(ARCHIVE_LEGAL_HOLDS, {"uniqueid": target})
        else:
            backend.delete(ARCHIVE_LEGAL_HOLD_CASES, {"uniqueid": target, "reason": hold.reason})
    return found


def get_hold(backend: Backend, uniqueid: str) -> Hold | None:
    """The oldest hold of a process instance; None when it is under none."""
    rows = hold_rows(backend, uniqueid)
    return rows[0][0] if rows else None


def list_holds(backend: Backend) -> list[Hold]:
    """Every hold, one per instance and case, by instance then time placed."""
    uniqueids = {row["uniqueid"] for row in backend.scan(ARCHIVE_LEGAL_HOLD_CASES)}
    uniqueids |= {row["uniqueid"] for row in backend.scan(ARCHIVE_LEGAL_HOLDS)}
    return [hold for uniqueid in sorted(uniqueids) for hold in holds_of(backend, uniqueid)]


def _files_of(backend: Backend, snapshot_id: str) -> dict[str, int | None]:
    """The documents keys of one snapshot's stored files, each with the size its snapshot
    claims (None when it says none). This archive's record first; a snapshot the Java
    service wrote has none, and its items name its files (``md5checksum``)."""
    recorded: dict[str, int | None] = {
        row["md5"]: None for row in backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id})
    }
    if recorded:
        return recorded
    doc = reads.load_complete(backend, snapshot_id)
    if doc is None:
        return {}
    claimed = {entry.name: entry.size for entry in iter_files(doc)}
    keys = reads.snapshot_file_keys(backend, snapshot_id, doc)
    return {key: claimed.get(name) for name, key in keys.items()}


def _stored_size(backend: Backend, key: str, claimed: int | None) -> int:
    """A file's size: this archive's record; for a file only the Java service stored, the
    size its snapshot claims, else the length of its pieces."""
    info = backend.get(ARCHIVE_FILES, {"md5": key}, ["size"])
    if info is not None:
        return int(info["size"] or 0)
    if claimed is not None:
        return claimed
    total = 0
    for row in backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"]):
        piece = backend.get(DOCUMENTS_DATA, {"data_id": row["data_id"]})
        total += len(piece["data"]) if piece is not None else 0
    return total


def bytes_only_in(backend: Backend, snapshot_ids: Iterable[str]) -> tuple[int, int]:
    """(files, bytes) of the files that no snapshot outside ``snapshot_ids`` carries: what
    deleting those snapshots releases. Bytes are the files' sizes; pieces shared with
    files that stay are counted too, so the stored bytes freed may be smaller."""
    doomed = set(snapshot_ids)
    files_of: dict[str, int | None] = {}
    for snapshot_id in sorted(doomed):
        for key, claimed in _files_of(backend, snapshot_id).items():
            files_of.setdefault(key, claimed)
    files = size = 0
    for key in sorted(files_of):
        if key == EMPTY_MD5:
            continue  # no bytes (and the partition every empty file shares)
        carriers = backend.scan(SNAPSHOTS_BY_DOCUMENT, {"md5": key}, columns=["snapshot"])
        if any(row["snapshot"] not in doomed and row["snapshot"] != PIN for row in carriers):
            continue
        files += 1
        size += _stored_size(backend, key, files_of[key])
    return files, size


def bytes_going_with(
    backend: Backend, snapshot_ids: Sequence[str], goes: Callable[[str], bool]
) -> tuple[int, int]:
    """(files, bytes) of the files the snapshots of one process instance (``snapshot_ids``)
    carry that go when it goes with every instance ``goes`` names (by uniqueid): the files
    no other snapshot keeps. A file other instances carry too is counted with the first
    of its instances in uniqueid order only, so that a walk over every instance (or over
    parts of them) counts each file once: what a retention run that deletes them all
    frees, told beforehand."""
    if not snapshot_ids:
        return 0, 0
    me = origin_id(snapshot_ids[-1])
    files_of: dict[str, int | None] = {}
    for snapshot_id in snapshot_ids:
        for key, claimed in _files_of(backend, snapshot_id).items():
            files_of.setdefault(key, claimed)
    files = size = 0
    for key in sorted(files_of):
        if key == EMPTY_MD5:
            continue
        others: set[str] = set()
        for row in backend.scan(SNAPSHOTS_BY_DOCUMENT, {"md5": key}, columns=["snapshot"]):
            if row["snapshot"] == PIN:
                continue  # this archive's mark on its files, no carrier
            other = origin_id(row["snapshot"])
            if other < me:
                break  # counted with that instance, if at all
            if other != me:
                others.add(other)
        else:
            if all(goes(other) for other in sorted(others)):
                files += 1
                size += _stored_size(backend, key, files_of[key])
    return files, size


def holds_snapshots_of(backend: Backend, uniqueid: str) -> bool:
    """Whether the archive holds a complete snapshot of the process instance."""
    for row in backend.scan(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": uniqueid}, columns=["snapshot"]):
        if backend.get(SNAPSHOTS, {"snapshot": row["snapshot"]}, ["snapshot"]) is not None:
            return True
    return False


def no_snapshots_of(uniqueid: str) -> str:
    """An id the archive holds no snapshot of: the id, and what it may be instead."""
    hint = ""
    if is_snapshot_id(uniqueid) and snapshot_millis(uniqueid):
        hint = f" (a snapshot id? its process instance is {origin_id(uniqueid)})"
    return f"{uniqueid}: the archive holds no snapshot of this process instance{hint}"


def _not_held(uniqueid: str) -> str:
    """Why a hold is refused (how to ask for a hold ahead of the data is the caller's to
    say: a flag, a box on a form)."""
    return f"{no_snapshots_of(uniqueid)}; nothing held"


class Holds:
    """The legal holds of one archive (``Archive.holds``); each hold placed or released is
    an entry of the ledger, queued before the hold's row changes."""

    def __init__(self, backend: Backend, ledger: LedgerBooks, actor: str = "") -> None:
        self._backend = backend
        self._ledger = ledger
        self._actor = actor

    def get(self, uniqueid: str) -> Hold | None:
        """The oldest hold of an instance; None when it is under none."""
        return get_hold(self._backend, uniqueid)

    def of(self, uniqueid: str) -> list[Hold]:
        """The holds of an instance, one per case, oldest first."""
        return holds_of(self._backend, uniqueid)

    def logged_as(self) -> list[tuple[Hold, str]]:
        """Every hold row with the case its ledger entries name ('' for a hold placed
        before store version 5: its entries name the instance only)."""
        return [
            (hold, "" if old else hold.reason)
            for uniqueid in sorted({h.uniqueid for h in list_holds(self._backend)})
            for hold, old in hold_rows(self._backend, uniqueid)
        ]

    def has(self, uniqueid: str, case: str) -> bool:
        """Whether the hold a ledger entry names is placed: the case's, or (``case``
        '') the one a version before store version 5 placed."""
        if not case:
            return _legacy(self._backend, uniqueid) is not None
        key = {"uniqueid": uniqueid, "reason": case}
        return self._backend.get(ARCHIVE_LEGAL_HOLD_CASES, key, ["reason"]) is not None

    def list(self) -> list[Hold]:
        """Every hold, one per instance and case."""
        return list_holds(self._backend)

    def place(
        self,
        uniqueid: str,
        reason: str,
        placed_by: str,
        now: dt.datetime,
        *,
        ahead: bool = False,
    ) -> Hold:
        """Hold a process instance the archive holds snapshots of for one case (its
        reason; the holds of other cases stay): an id it holds none of (unknown,
        mistyped, a snapshot id) is a ``NotFoundError`` and nothing is placed, unless
        ``ahead`` (a hold placed ahead of the data it is to protect)."""
        target, case = uniqueid.strip(), reason.strip()
        if target and not ahead and not holds_snapshots_of(self._backend, target):
            raise NotFoundError(_not_held(target))
        if target and case:
            by = placed_by or self._actor
            entry = Entry(HOLD_PLACED, target, epoch_ms(now), by, reason=case, case=case)
            self._ledger.enqueue(entry)
        return place_hold(self._backend, uniqueid, reason, placed_by, now)

    def adopt(self, holds: Iterable[Hold]) -> int:
        """Place the holds of another archive (an archive copied, ``recovery/export.py``)
        with their reason, time and who placed them, also ahead of the data; a hold this
        archive already has for the same case is kept as it is. The number placed."""
        placed = 0
        for hold in holds:
            reason = hold.reason or NO_REASON  # placed by an old version without one
            if reason not in {h.reason or NO_REASON for h in self.of(hold.uniqueid)}:
                self.place(hold.uniqueid, reason, hold.placed_by, hold.placed, ahead=True)
                placed += 1
        return placed

    def holds_snapshots_of(self, uniqueid: str) -> bool:
        """Whether the archive holds a complete snapshot of the process instance."""
        return holds_snapshots_of(self._backend, uniqueid.strip())

    def release(
        self, uniqueid: str, released_by: str = "", reason: str | None = None
    ) -> Hold | None:
        """Remove the hold of one case (``reason``); None when the instance is under no
        hold. Without a reason, the instance's only hold: a ``ConfigError`` when it is
        under several; a reason it is not held for is a ``NotFoundError``."""
        target = uniqueid.strip()
        rows = hold_rows(self._backend, target) if target else []
        if not rows:
            return None
        cases = sorted({hold.reason for hold, _old in rows})
        if reason is None and len(cases) > 1:
            raise ConfigError(
                f"{target}: held for {len(cases)} cases ({'; '.join(cases)}): name the one "
                "to release by its reason"
            )
        case = cases[0] if reason is None else reason.strip()
        if case not in cases:
            raise NotFoundError(
                f"{target}: no hold for {case!r} (held for: {'; '.join(cases)}); nothing released"
            )
        for hold, old in rows:
            if hold.reason == case:
                by = released_by or self._actor
                entry = Entry(HOLD_RELEASED, target, now_ms(), by, case="" if old else case)
                self._ledger.enqueue(entry)
        release_hold(self._backend, target, case)
        return next(hold for hold, _old in rows if hold.reason == case)

    def bytes_going_with(
        self, snapshot_ids: Sequence[str], goes: Callable[[str], bool]
    ) -> tuple[int, int]:
        """(files, bytes) an instance's going frees with the others ``goes`` names, each
        file counted once over all instances (see ``bytes_going_with``)."""
        return bytes_going_with(self._backend, snapshot_ids, goes)

    def bytes_only_in(self, snapshot_ids: Iterable[str]) -> tuple[int, int]:
        """(files, bytes) that deleting these snapshots releases (see ``bytes_only_in``)."""
        return bytes_only_in(self._backend, snapshot_ids)
