"""Where every look-up crosses the network (Cassandra), a piece or a file this archive
confirmed stored is trusted for a quarter of the collector's grace period without being
looked up again (``PieceStore``, ``FileStore.register``): never longer, and never where
look-ups are local."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.filestore.confirmed import RecentlyConfirmed
from imixs_archive.filestore.gc import collect
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_GARBAGE,
    DOCUMENTS,
    DOCUMENTS_DATA,
    Table,
)
from support.snapshots import content_of, make_snapshot

X = random.Random(31).randbytes(900_000)


class Counting(DelegatingBackend):
    """Counts reads by key and rows written, by table; ``local_reads`` as given."""

    def __init__(self, inner: Backend, *, local_reads: bool) -> None:
        super().__init__(inner)
        self.local_reads = local_reads
        self.gets: Counter[str] = Counter()
        self.puts: Counter[str] = Counter()

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        self.gets[table.name] += 1
        return super().get(table, key, columns)

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        written = super().put(table, rows)
        self.puts[table.name] += written
        return written

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        written = super().put_partition(table, rows)
        self.puts[table.name] += written
        return written


def test_a_carried_attachment_is_not_looked_up_again_while_confirmed(backend: Backend) -> None:
    remote = Counting(backend, local_reads=False)
    with Archive(remote) as archive:
        archive.store(make_snapshot(0, files={"x.bin": X}))
        assert remote.gets[DOCUMENTS_DATA.name] and remote.gets[ARCHIVE_FILES.name]
        remote.gets.clear()
        remote.puts.clear()
        later = archive.store(make_snapshot(1, files={"x.bin": X}))
        looked_up = {DOCUMENTS_DATA.name, ARCHIVE_GARBAGE.name, ARCHIVE_FILES.name}
        assert not looked_up & set(remote.gets)
        assert not {DOCUMENTS_DATA.name, DOCUMENTS.name} & set(remote.puts)
        assert content_of(archive.load(later.snapshot_id), "x.bin") == X
    assert verify(backend).ok


def test_where_look_ups_are_local_every_file_is_looked_up(backend: Backend) -> None:
    local = Counting(backend, local_reads=True)
    with Archive(local) as archive:
        archive.store(make_snapshot(0, files={"x.bin": X}))
        local.gets.clear()
        archive.store(make_snapshot(1, files={"x.bin": X}))
        assert local.gets[ARCHIVE_FILES.name] and local.gets[DOCUMENTS_DATA.name]


def test_the_trust_ends_before_the_collector_can_remove_what_was_confirmed(
    backend: Backend,
) -> None:
    """The file and its pieces, confirmed by one store, are removed by the collector (its
    grace period twice over: the file, then its pieces); the same bytes arriving then are
    looked up, found gone and written again, not taken as stored from memory."""
    grace = 1.2  # trusted for 0.3 s
    remote = Counting(backend, local_reads=False)
    with Archive(remote, gc_grace=grace) as archive:
        first = archive.store(make_snapshot(0, files={"x.bin": X})).snapshot_id
        archive.delete(first)
        assert collect(backend, grace=grace, clock_skew_us=0).listed_files == 1
        time.sleep(grace + 0.05)
        assert collect(backend, grace=grace, clock_skew_us=0).removed_files == 1
        time.sleep(grace + 0.05)
        assert collect(backend, grace=grace, clock_skew_us=0).removed_pieces
        assert next(backend.scan(DOCUMENTS_DATA), None) is None
        remote.puts.clear()
        again = archive.store(make_snapshot(1, files={"x.bin": X}))
        assert remote.puts[DOCUMENTS_DATA.name] and remote.puts[ARCHIVE_FILES.name]
        assert content_of(archive.load(again.snapshot_id), "x.bin") == X
    assert verify(backend).ok


def test_the_memory_keeps_the_newest_confirmed_for_its_time() -> None:
    """``RecentlyConfirmed``: at most ``most`` keys, the one confirmed longest ago goes
    first; a key past its time is forgotten; no time, nothing kept."""
    now = time.monotonic()
    recent = RecentlyConfirmed[str](60.0, 2)
    recent.keep([("a", "A"), ("b", "B")], now)
    recent.keep([("a", "A2")], now)  # confirmed again: now the newest
    recent.keep([("c", "C")], now)
    assert [recent.get(key) for key in "abc"] == ["A2", None, "C"]
    recent.keep([("old", "O")], now - 60.5)
    assert recent.get("old") is None
    never = RecentlyConfirmed[str](0.0, 2)
    never.keep([("a", "A")], now)
    assert never.get("a") is None
