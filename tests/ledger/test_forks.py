"""The fork check (``ledger/forks.py``): a store that cannot answer is no fork, nor is a head
read just before another process's round recorded what it signed."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.forks import fork_from, refused
from imixs_archive.ledger.sequencer import RoundReport, Sequencer
from imixs_archive.ledger.tree import TREE, TreeState, read_tree
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import ARCHIVE_LEDGER_HEAD, ARCHIVE_LEDGER_TILES, Table
from imixs_archive.tlog.note import Checkpoint
from support.snapshots import make_snapshot


class _TilesUnreadable(DelegatingBackend):
    """A store whose reads of the tree's tiles fail for a moment (a node restarting)."""

    def scan(
        self, table: Table, partition: Mapping[str, Any] | None = None, **kw: Any
    ) -> Iterator[Row]:
        if table is ARCHIVE_LEDGER_TILES:
            raise StoreUnavailableError("the store is unavailable (test)")
        return super().scan(table, partition, **kw)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(
        {"ARCHIVE_DATA_DIR": str(tmp_path / "keys"), "ARCHIVE_LEDGER_ORIGIN": "example.com/a"}
    )


def test_a_store_that_cannot_answer_is_no_fork(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    """The check of the signed prefix meets an unavailable store: the error goes up (the
    round is tried again), it is not taken for a fork that would stop the ledger for good."""
    for step in range(3):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    signed = read_tree(archive.ledger)
    assert signed is not None
    for step in range(3, 6):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain()
    head = read_tree(archive.ledger)
    assert head is not None and head.size == 6
    checkpoint = Checkpoint(signed.origin, signed.size, signed.root)
    assert fork_from(archive.ledger, checkpoint, head.size, head.root) == ""
    unreadable = LedgerBooks(_TilesUnreadable(backend))
    with pytest.raises(StoreUnavailableError):
        fork_from(unreadable, checkpoint, head.size, head.root)


@pytest.fixture
def folder_settings(tmp_path: Path) -> Settings:
    return load_settings(
        {
            "ARCHIVE_DATA_DIR": str(tmp_path / "keys"),
            "ARCHIVE_LEDGER_ORIGIN": "example.com/a",
            "ARCHIVE_LEDGER_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        }
    )


def _late_round(monkeypatch: pytest.MonkeyPatch, late: Sequencer) -> None:
    """A round of ``late``, a process that took the lease before it ran out and finishes its
    round after another took it over (a stall): it moves the head, signs and records."""
    monkeypatch.setattr(late, "_take_lease", lambda: "")
    report = late.run(checkpoint=True)
    assert report.logged and report.checkpoint


def test_a_head_read_before_another_process_signed_is_no_fork(
    archive: Archive, folder_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process that took the lease over read the head; then the stalled one finished its
    round and recorded its checkpoint beside the key and in the checkpoint folder. The head
    read is older than those records, not a fork: the round goes on, nothing is stopped.
    (Seen in the ledger's kill test: every sequencer stopped until ``ledger new-log``.)"""
    for step in range(3):
        archive.store(make_snapshot(step))
    late = Sequencer(archive, folder_settings)
    late.drain(checkpoint=True)
    late.release()
    for step in range(3, 6):
        archive.store(make_snapshot(step))
    taker = Sequencer(archive, folder_settings)
    read_head = taker.start

    def head_then_the_late_round() -> TreeState:
        state = read_head()
        _late_round(monkeypatch, late)
        return state

    monkeypatch.setattr(taker, "start", head_then_the_late_round)
    report = taker.run(checkpoint=True)
    assert refused(archive.ledger) == ""
    assert not report.busy
    head = read_tree(archive.ledger)
    assert head is not None and (head.size, head.checkpoint_size) == (6, 6)


def test_an_older_head_recorded_after_a_newer_one_is_no_fork(
    archive: Archive,
    folder_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A process's first round records the head it read (what a process that stopped left
    out); the stalled one's round recorded a newer checkpoint of the same log in the
    checkpoint folder meanwhile. The older one is of the same log: no error, and the folder
    keeps both."""
    for step in range(3):
        archive.store(make_snapshot(step))
    late = Sequencer(archive, folder_settings)
    late.drain(checkpoint=True)
    late.release()
    taker = Sequencer(archive, folder_settings)
    record = taker._record

    def late_round_then_record(state: TreeState, report: RoundReport) -> None:
        for step in range(3, 6):
            archive.store(make_snapshot(step))
        _late_round(monkeypatch, late)
        record(state, report)

    monkeypatch.setattr(taker, "_record", late_round_then_record)
    with caplog.at_level(logging.ERROR, logger="imixs_archive"):
        report = taker.run(checkpoint=True)
    assert report.notes == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    folder = Path(folder_settings.ledger_checkpoint_dir)
    names = sorted(p.name for p in folder.rglob("checkpoint-*"))
    assert names == ["checkpoint-000000000003", "checkpoint-000000000006"]
    assert refused(archive.ledger) == ""


class _StaleHead(DelegatingBackend):
    """A store whose first reads of the ledger's head give an older one (a replica that
    missed the newest write, read at consistency ONE)."""

    def __init__(self, backend: Backend, old: Row, reads: int) -> None:
        super().__init__(backend)
        self.old, self.reads = old, reads

    def get(self, table: Table, key: Mapping[str, Any], columns: Any = None) -> Row | None:
        if table is ARCHIVE_LEDGER_HEAD and key.get("name") == TREE and self.reads > 0:
            self.reads -= 1
            return self.old
        return super().get(table, key, columns)


def test_a_stale_read_of_the_head_is_no_fork(
    archive: Archive, backend: Backend, folder_settings: Settings
) -> None:
    """The head read again after the records is confirmed by a compare and set: a read
    that met an older copy of the head (two here) is read again, not taken for a fork that
    stops every sequencer."""
    for step in range(3):
        archive.store(make_snapshot(step))
    with Sequencer(archive, folder_settings) as first:
        first.drain(checkpoint=True)
    old = backend.get(ARCHIVE_LEDGER_HEAD, {"name": TREE})
    assert old is not None
    for step in range(3, 6):
        archive.store(make_snapshot(step))
    with Sequencer(archive, folder_settings) as second:
        second.drain(checkpoint=True)  # signed 6, recorded beside the key
    with (
        Archive(_StaleHead(backend, old, reads=3)) as stale,
        Sequencer(stale, folder_settings) as third,
    ):
        report = third.run(checkpoint=True)
    assert refused(archive.ledger) == "" and not report.busy
    head = read_tree(archive.ledger)
    assert head is not None and (head.size, head.checkpoint_size) == (6, 6)
