"""What the store says of itself, and the few things asked of it whole (``Archive.storage``):
its kind, its description and findings, a copy of it, its compaction, a bulk load made
durable at its end. Nothing here reads or writes a table."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from imixs_archive.storage.base import Backend, Compaction


class StoreDoor:
    """The store behind one archive, as those above the archive may see it."""

    def __init__(self, backend: Backend, *, java_writes: bool = False) -> None:
        self._backend = backend
        self._java_writes = java_writes

    @property
    def name(self) -> str:
        """The kind of store: ``sqlite`` or ``cassandra``."""
        return self._backend.name

    @property
    def java_may_write(self) -> bool:
        """Whether the Java service can write into this store (a Cassandra keyspace): rows
        without this archive's seal are then its snapshots, not forgeries."""
        return self._backend.name == "cassandra"

    @property
    def java_writes(self) -> bool:
        """Whether the Java service does write into this store, as the operator says
        (``ARCHIVE_JAVA_WRITES``) where it can (:attr:`java_may_write`): snapshots gone
        without a logged deletion are then its deletes (its ``$snapshot.history`` cleanup,
        its Inspect page), logged as removed elsewhere, not tampering."""
        return self._java_writes and self.java_may_write

    @property
    def reads_are_local(self) -> bool:
        """Whether reading the store costs about what hashing does (the embedded store;
        ``Backend.local_reads``): a file is then compared with its stored twin as it is
        parsed. False where every read is a round trip (Cassandra)."""
        return self._backend.local_reads

    def describe(self) -> dict[str, Any]:
        """What the store says of itself (kind, location, versions ...)."""
        return self._backend.describe()

    def findings(self) -> list[str]:
        """Damage the store found on its own, below the rows (``Backend.findings``)."""
        return self._backend.findings()

    def file_problems(self, *, full: bool = False) -> list[str]:
        """Damage in the store's own file, each line starting with its table's name
        (``Backend.file_problems``; ``store_damage.way_out`` says what to do)."""
        return self._backend.file_problems(full=full)

    def copy_to(self, folder: Path) -> Path:
        """A consistent copy of the whole store in ``folder``, taken while others write
        (``Backend.copy_to``); the path of the copy."""
        return self._backend.copy_to(folder)

    def compact(self, *, min_free: int = 0) -> Compaction:
        """Give the space of deleted rows back to the disk (``Backend.compact``)."""
        return self._backend.compact(min_free=min_free)

    def durable_at_end(self) -> AbstractContextManager[None]:
        """A bulk load from input that stays where it is: what is stored in the block is
        durable when it ends, each write landing whole and in order before (see
        ``Backend.durable_at_end``; never around a write that is a promise to others)."""
        return self._backend.durable_at_end()
