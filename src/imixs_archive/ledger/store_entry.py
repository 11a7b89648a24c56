"""The ledger's entry of one store, queued with it (``snapshots.py``).

The entry names the snapshot's content digest, so it can be made only once the XML is
rendered; it must be in the queue before the ``snapshots`` row makes the snapshot
complete. For a snapshot whose XML stays inline (nearly all) the XML is rendered first and
the entry's write starts before the index rows, on Cassandra alongside them (a write that
would otherwise cost one more round trip in a row of eight); it is waited for before the
``snapshots`` row. A snapshot written in parts queues its entry right before its row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from imixs_archive.document.conventions import FileEntry
from imixs_archive.filestore.content import IngestedContent
from imixs_archive.filestore.store import FileStore
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.entries import STORED, Entry, snapshot_digest
from imixs_archive.timezones import now_ms


class StoreEntry:
    """The entry of one snapshot's store: started early when it can be, finished (waited
    for, or written) right before the snapshot's row, withdrawn when another process
    wrote the row first."""

    def __init__(
        self,
        ledger: LedgerBooks,
        files: FileStore,
        snapshot_id: str,
        actor: str,
        stored_files: Sequence[tuple[FileEntry, IngestedContent | str, str]],
    ) -> None:
        """``stored_files``: (entry, its content as ingested or the key it names, its
        documents key) of each file."""
        self._ledger = ledger
        self._files = files
        self._snapshot_id = snapshot_id
        self._actor = actor
        self._stored_files = stored_files
        self._wait: Callable[[], None] | None = None
        self._place: tuple[int, str] | None = None

    def _entry(self, xml_digest: str) -> Entry:
        digests = [
            (entry.name, _file_digest(self._files, content, key))
            for entry, content, key in self._stored_files
        ]
        content = snapshot_digest(self._snapshot_id, xml_digest, digests)
        return Entry(STORED, self._snapshot_id, now_ms(), self._actor, content)

    def start(self, xml_digest: str) -> None:
        """Start queueing the entry (the XML is rendered: its digest is known)."""
        self._place, self._wait = self._ledger.enqueue_soon(self._entry(xml_digest))

    def finish(self, xml_digest: str) -> None:
        """Right before the snapshot's row: the entry is in the queue when this returns."""
        if self._wait is not None:
            self._wait()
        else:
            self._place = self._ledger.enqueue(self._entry(xml_digest))

    def withdraw(self) -> None:
        """The row was not written (another process stored the snapshot first, and its
        entry logs it)."""
        if self._place is not None:
            self._ledger.unqueue(self._place[0], self._snapshot_id, self._place[1])


def _file_digest(files: FileStore, content: IngestedContent | str, key: str) -> str:
    """A stored file's digest for the ledger: the ingest's own (over its content-defined
    cuts, however it is stored), or, for a file named by its key alone, what the store
    holds."""
    if isinstance(content, IngestedContent):
        return content.ledger_digest
    return files.ledger_digest(key, where=f"file {key}")
