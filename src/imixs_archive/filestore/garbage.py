"""The collector's list of unreferenced files and pieces (``archive_garbage``), and the
two rules every process follows about it; the collector itself is ``gc.py``.

* An item goes on the list only while nothing refers to it, stamped with the time.
* An ingest that reuses an item on the list takes it off the list *before* it relies on
  it (and writes it again), so the collector, which re-checks the list and the references
  before removing anything, leaves it alone.

Beside the Java service two more kinds are listed (``gc_java.py``): :data:`CUT`, a piece
the Java service cut that no ``documents`` row lists, and :data:`REF`, a reference to a
file from a snapshot that is gone.

A file is "used" while a snapshot refers to it in ``snapshots_by_document``. Beside those
rows, each file this archive registers gets one more row, :data:`PIN`: the Java service
deletes a file's ``documents_data`` rows once no row is left for its MD5, and would so
take pieces that other files of this archive share. With the pin there is always a row,
so the Java service never deletes a file this archive wrote; this archive's collector
removes it when the pin is all that is left. The pin sorts before every snapshot id, so
reading newest first finds a real snapshot before it.
"""

from __future__ import annotations

import time

from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_GARBAGE, SNAPSHOTS_BY_DOCUMENT

FILE = "file"
PIECE = "piece"
CUT = "java-piece"
"""A piece cut by the Java service (a random id) that no ``documents`` row lists."""
REF = "reference"
"""A ``snapshots_by_document`` row naming a snapshot that is gone (see :func:`ref_id`)."""
PIECE_REF = "piece-reference"
"""An ``archive_piece_refs`` row whose file no longer lists the piece (the Java service's
rows written over this archive's; see :func:`ref_id`: ``<data_id> <key>``)."""
PIN = "!archive"
"""The ``snapshots_by_document`` row that keeps the Java service off this archive's files."""


def now_us() -> int:
    return time.time_ns() // 1000


def listed(backend: Backend, kind: str, item: str) -> int | None:
    """Since when the item is on the list (epoch microseconds), or None."""
    row = backend.get(ARCHIVE_GARBAGE, {"id": item, "kind": kind}, ["since"])
    return int(row["since"]) if row is not None else None


def put_on_list(backend: Backend, kind: str, item: str, size: int, since: int) -> None:
    backend.put(ARCHIVE_GARBAGE, [{"id": item, "kind": kind, "since": since, "size": size}])


def take_off_list(backend: Backend, kind: str, item: str) -> bool:
    """Take an item off the list if it is on it; whether it was."""
    if listed(backend, kind, item) is None:
        return False
    backend.delete(ARCHIVE_GARBAGE, {"id": item, "kind": kind})
    return True


def ref_id(key: str, snapshot: str) -> str:
    """The listed id of the reference of ``snapshot`` to the file ``key`` (a documents key
    holds no space)."""
    return f"{key} {snapshot}"


def ref_of(item: str) -> tuple[str, str]:
    """(key, snapshot) of a listed reference."""
    key, _space, snapshot = item.partition(" ")
    return key, snapshot


def pin_row(key: str) -> dict[str, str]:
    return {"md5": key, "snapshot": PIN}


def file_used(backend: Backend, key: str) -> bool:
    """Whether a snapshot refers to the file. Reads newest first, one row: the snapshots
    deleted long ago (tombstones on Cassandra) lie behind the live ones."""
    rows = backend.scan(
        SNAPSHOTS_BY_DOCUMENT, {"md5": key}, descending=True, limit=1, columns=["snapshot"]
    )
    newest = next(rows, None)
    return newest is not None and newest["snapshot"] != PIN
