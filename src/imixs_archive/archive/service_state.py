"""The service state, kept where the Java service keeps it.

An XML document in the ``snapshots`` row with id ``'0'``: ``sync.point``, ``sync.count``,
``sync.size``, ``restore.*``. The Java service reads the same items, so an archive can
switch between the two services and continue where the other stopped. Items this
service adds (``resync.*``, ``restore.failed``, ``restore.options``) are ignored by the
Java service; the sync's own records (failures and dead letters, claims, gone snapshots,
each process's counters, the catch-up point) are tables of their own (``archive_sync_*``,
``sync/records.py``).
"""

from __future__ import annotations

from imixs_archive.archive.snapshot_xml import load_row, seal
from imixs_archive.document.conventions import METADATA_ID
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import SNAPSHOTS


def load_state(backend: Backend) -> Document:
    """The state document (empty when none was written yet), checked against its seal
    like every snapshot row (``snapshot_xml.py``)."""
    row = backend.get(SNAPSHOTS, {"snapshot": METADATA_ID})
    if row is None or not row["data"]:
        return Document()
    return load_row(backend, row)


def save_state(backend: Backend, state: Document) -> None:
    state["$uniqueid"] = METADATA_ID
    backend.put(SNAPSHOTS, [{"snapshot": METADATA_ID, "data": seal(to_xml(state))}])


class ServiceState:
    """The service state of one archive (``Archive.state``)."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def load(self) -> Document:
        return load_state(self._backend)

    def save(self, state: Document) -> None:
        save_state(self._backend, state)
