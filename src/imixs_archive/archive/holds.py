"""Legal holds (``archive_legal_holds``) and the reads retention needs.

A hold is one row per process instance: placing it is a single upsert, releasing it a
single delete, so two operators never lose each other's holds. Retention
(``services/retention.py``) deletes no snapshot of a held instance.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from imixs_archive.archive.garbage import PIN
from imixs_archive.errors import ConfigError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_LEGAL_HOLDS,
    ARCHIVE_SNAPSHOT_FILES,
    SNAPSHOTS_BY_DOCUMENT,
)


@dataclass(frozen=True)
class Hold:
    uniqueid: str
    reason: str
    placed: dt.datetime
    placed_by: str

    def to_json(self) -> dict[str, Any]:
        return {
            "uniqueid": self.uniqueid,
            "reason": self.reason,
            "placed": self.placed.isoformat(timespec="seconds"),
            "placed_by": self.placed_by,
        }


def place_hold(
    backend: Backend, uniqueid: str, reason: str, placed_by: str, now: dt.datetime
) -> Hold:
    hold = Hold(uniqueid.strip(), reason.strip(), now.astimezone(dt.UTC), placed_by)
    if not hold.uniqueid:
        raise ConfigError("give the $uniqueid of the process instance to hold")
    row = {
        "uniqueid": hold.uniqueid,
        "reason": hold.reason,
        "placed": int(hold.placed.timestamp() * 1000),
        "placed_by": hold.placed_by,
    }
    backend.put(ARCHIVE_LEGAL_HOLDS, [row])
    return hold


def release_hold(backend: Backend, uniqueid: str) -> bool:
    """Remove a hold; False when there was none."""
    key = {"uniqueid": uniqueid.strip()}
    if backend.get(ARCHIVE_LEGAL_HOLDS, key, ["uniqueid"]) is None:
        return False
    backend.delete(ARCHIVE_LEGAL_HOLDS, key)
    return True


def _hold(row: dict[str, Any]) -> Hold:
    placed = dt.datetime.fromtimestamp(int(row["placed"] or 0) / 1000, dt.UTC)
    return Hold(row["uniqueid"], row["reason"] or "", placed, row["placed_by"] or "")


def get_hold(backend: Backend, uniqueid: str) -> Hold | None:
    row = backend.get(ARCHIVE_LEGAL_HOLDS, {"uniqueid": uniqueid})
    return None if row is None else _hold(dict(row))


def list_holds(backend: Backend) -> list[Hold]:
    return sorted(
        (_hold(dict(row)) for row in backend.scan(ARCHIVE_LEGAL_HOLDS)),
        key=lambda h: h.uniqueid,
    )


def file_keys(backend: Backend, snapshot_id: str) -> set[str]:
    """The documents keys of one snapshot's stored files."""
    return {row["md5"] for row in backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id})}


def bytes_only_in(backend: Backend, snapshot_ids: Iterable[str]) -> tuple[int, int]:
    """(files, bytes) of the files that no snapshot outside ``snapshot_ids`` carries: what
    deleting those snapshots releases. Bytes are the files' sizes; pieces shared with
    files that stay are counted too, so the stored bytes freed may be smaller."""
    doomed = set(snapshot_ids)
    keys: set[str] = set()
    for snapshot_id in sorted(doomed):
        keys |= file_keys(backend, snapshot_id)
    files = size = 0
    for key in sorted(keys):
        carriers = backend.scan(SNAPSHOTS_BY_DOCUMENT, {"md5": key}, columns=["snapshot"])
        if any(row["snapshot"] not in doomed and row["snapshot"] != PIN for row in carriers):
            continue
        info = backend.get(ARCHIVE_FILES, {"md5": key}, ["size"])
        files += 1
        size += int(info["size"] or 0) if info else 0
    return files, size
