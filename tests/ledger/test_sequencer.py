"""The ledger's sequencer: every change logged once, in order, in a tree whose head and
checkpoints agree with its entries, on both stores."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import StoreError
from imixs_archive.ledger import sequencer as sequencer_module
from imixs_archive.ledger.checkpoints import copies, open_checkpoint
from imixs_archive.ledger.entries import DELETED, STORED, Entry
from imixs_archive.ledger.keys import key_path, load_signer
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tiles import tile_reader
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import ARCHIVE_LEDGER_QUEUE, Table
from imixs_archive.timezones import now_ms
from imixs_archive.tlog.merkle import Frontier, leaf_hash, root_of
from support.snapshots import ORIGIN, make_snapshot


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "keys")})


def _sid(step: int, origin: str = ORIGIN) -> str:
    return str(make_snapshot(step, origin=origin).get_first("$uniqueid"))


def _log(archive: Archive) -> list[Entry]:
    return [Entry.decode(logged.text) for logged in archive.ledger.entries(0)]


def _kinds(archive: Archive) -> list[tuple[str, str]]:
    return [(entry.kind, entry.target) for entry in _log(archive)]


def test_every_change_is_logged_once_in_the_order_made(
    archive: Archive, settings: Settings
) -> None:
    changes = [
        lambda: archive.store(make_snapshot(1, files={"a.pdf": b"%PDF one"})),
        lambda: archive.store(make_snapshot(2)),
        lambda: archive.store(make_snapshot(1, files={"a.pdf": b"%PDF one"})),  # no change
        lambda: archive.delete(_sid(1)),
        lambda: archive.holds.place(ORIGIN, "case 4711", "mia", dt.datetime.now(dt.UTC)),
        lambda: archive.holds.release(ORIGIN, "mia"),
    ]
    for change in changes:
        change()
        time.sleep(0.002)  # the log's order is the order made, to the millisecond
    with Sequencer(archive, settings) as sequencer:
        report = sequencer.run()
    assert report.logged == 5 and report.size == 5 and not report.busy
    assert _kinds(archive) == [
        (STORED, _sid(1)),
        (STORED, _sid(2)),
        (DELETED, _sid(1)),
        ("hold-placed", ORIGIN),
        ("hold-released", ORIGIN),
    ]
    entries = _log(archive)
    assert (entries[2].reason == "delete" and entries[2].by == archive.actor) or entries[2].by
    assert entries[3].reason == "case 4711" and entries[3].by == "mia"
    assert archive.ledger.subject(_sid(1)).kind == DELETED  # type: ignore[union-attr]
    assert archive.ledger.subject(_sid(2)).idx == 1  # type: ignore[union-attr]
    assert (
        sum(
            1
            for slot in range(now_ms() // 60_000 - 5, now_ms() // 60_000 + 2)
            for _ in archive.ledger.queued(slot)
        )
        == 0
    )  # the queue is empty


def test_the_head_is_the_tree_of_the_entries_and_every_node_is_stored(
    archive: Archive, settings: Settings
) -> None:
    for step in range(13):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.run(limit=1)  # a round per minute of the queue at least: all here
        sequencer.drain()
        head = sequencer.tree()
    assert head is not None and head.size == 13
    leaves = [leaf_hash(logged.text.encode()) for logged in archive.ledger.entries(0)]
    assert [logged.leaf for logged in archive.ledger.entries(0)] == leaves
    assert head.root == root_of(leaves)
    # the leaves are in the partial tile 0/0, its one row; every complete subtree of them
    # is read from it: level 3 (8 entries), level 2 (4) ...
    assert head.tiled == 13
    assert archive.ledger.tile_widths(0, 0) == [13]
    assert archive.ledger.tile(0, 0) == b"".join(leaves)
    nodes = tile_reader(archive.ledger)
    assert nodes.node(3, 0) == root_of(leaves[:8])
    assert nodes.node(2, 2) == root_of(leaves[8:12])
    assert nodes.node(1, 5) == root_of(leaves[10:12])
    assert nodes.node(0, 12) == leaves[12]


def test_a_store_of_the_same_content_again_after_a_delete_is_logged_again(
    archive: Archive, settings: Settings
) -> None:
    snapshot = make_snapshot(1, files={"a.pdf": b"%PDF one"})
    with Sequencer(archive, settings) as sequencer:
        archive.store(snapshot)
        sequencer.run()
        archive.delete(_sid(1), reason="retention")
        sequencer.run()
        archive.store(snapshot)
        sequencer.run()
    entries = _log(archive)
    assert [(e.kind, e.reason) for e in entries] == [
        (STORED, ""),
        (DELETED, "retention"),
        (STORED, ""),
    ]
    assert entries[0].digest == entries[2].digest


def test_a_change_not_yet_made_waits_and_one_never_made_is_dropped(
    archive: Archive, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry is queued before its change's last row: a store that died between the two
    leaves an entry for a snapshot that is not there. It waits (the store may still be
    under way), and is dropped once it is older than the wait."""
    entry = Entry(STORED, _sid(7), now_ms(), "tester", "ab" * 32)
    archive.ledger.enqueue(entry)
    with Sequencer(archive, settings) as sequencer:
        report = sequencer.run()
        assert (report.logged, report.waiting, report.abandoned) == (0, 1, 0)
        monkeypatch.setattr(sequencer_module, "SETTLE_MS", 0)
        report = sequencer.run()
    assert (report.logged, report.waiting, report.abandoned) == (0, 0, 1)
    assert _log(archive) == []


def test_a_change_followed_by_another_is_logged_even_when_the_store_shows_only_the_last(
    archive: Archive, settings: Settings
) -> None:
    archive.store(make_snapshot(1))
    archive.delete(_sid(1), reason="history")
    with Sequencer(archive, settings) as sequencer:
        sequencer.run()
    assert _kinds(archive) == [(STORED, _sid(1)), (DELETED, _sid(1))]


def test_entries_past_the_head_are_taken_over_not_doubled(
    archive: Archive, settings: Settings
) -> None:
    """A round that wrote entries and died before moving the head: the next takes them as
    they are, and drops their queue rows as repeats."""
    for step in range(3):
        archive.store(make_snapshot(step))
    queued = [
        q
        for slot in range(now_ms() // 60_000 - 1, now_ms() // 60_000 + 2)
        for q in archive.ledger.queued(slot)
    ]
    assert len(queued) == 3
    with Sequencer(archive, settings) as sequencer:
        sequencer.start()
        first = sorted(queued, key=lambda q: q.entry_key)[0]
        assert first.entry is not None
        text = first.entry.encode()
        assert archive.ledger.write_entry(0, text, leaf_hash(text.encode())) is None
        report = sequencer.run()
    assert report.adopted == 1 and report.logged == 2 and report.repeated == 1
    targets = [e.target for e in _log(archive)]
    assert targets[0] == first.entry.target
    assert sorted(targets) == [_sid(0), _sid(1), _sid(2)]


def test_a_round_never_overwrites_an_entry_another_wrote(
    archive: Archive, settings: Settings
) -> None:
    """Two sequencers that both think they hold the lease: the log is written once, so
    the second finds the entry there, another than its own, and stops its round."""
    archive.store(make_snapshot(1))
    archive.store(make_snapshot(2))
    with Sequencer(archive, settings) as sequencer:
        sequencer.start()
        intruder = Entry(STORED, _sid(9), now_ms(), "other", "cd" * 32).encode()
        archive.ledger.write_entry(1, intruder, leaf_hash(intruder.encode()))
        report = sequencer.run()
        assert report.busy == "another process wrote the log meanwhile"
        assert sequencer.tree().size == 0  # type: ignore[union-attr]
        assert archive.ledger.entry(1).text == intruder  # type: ignore[union-attr]


def test_sequencers_in_many_threads_at_once_log_each_change_once(
    archive: Archive, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the lease (each thread ignores it), what keeps the log whole is writing
    each entry once and moving the head by compare and set."""
    monkeypatch.setattr(Sequencer, "_take_lease", lambda self: "")
    for step in range(40):
        archive.store(make_snapshot(step))
    errors: list[BaseException] = []

    def rounds() -> None:
        try:
            sequencer = Sequencer(archive, settings)
            for _ in range(15):
                sequencer.run(limit=7)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=rounds) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    Sequencer(archive, settings).drain()
    targets = [entry.target for entry in _log(archive)]
    assert sorted(targets) == sorted(_sid(step) for step in range(40))  # each once
    head = Sequencer(archive, settings).tree()
    assert head is not None and head.size == 40
    assert head.root == root_of(
        [leaf_hash(logged.text.encode()) for logged in archive.ledger.entries(0)]
    )


def test_the_lease_lets_one_process_sequence_at_a_time(
    archive: Archive, settings: Settings
) -> None:
    archive.store(make_snapshot(1))
    first, second = Sequencer(archive, settings), Sequencer(archive, settings)
    assert first.run().logged == 1
    archive.store(make_snapshot(2))
    busy = second.run()
    assert busy.busy.endswith("sequences the ledger") and busy.logged == 0
    first.release()  # a process that stops gives it up: the other takes over at once
    assert second.run().logged == 1
    second.release()


def test_the_key_is_created_once_with_a_message_and_signs_every_checkpoint(
    archive: Archive, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    archive.store(make_snapshot(1))
    with caplog.at_level(logging.WARNING), Sequencer(archive, settings) as sequencer:
        report = sequencer.run()
    path = key_path(settings)
    assert f"created the ledger's signing key in {path}: back it up" in caplog.text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    signer = load_signer(path)
    assert signer is not None
    head = sequencer.tree()
    assert head is not None and report.checkpoint == 1 and head.key == signer.vkey()
    checkpoint = open_checkpoint(head.checkpoint, [signer.verifier()], "the head")
    assert (checkpoint.origin, checkpoint.size, checkpoint.root_hash) == (
        signer.name,
        1,
        head.root,
    )
    notes = list(archive.ledger.checkpoints(dt.datetime.now(dt.UTC).year))
    assert [(size, note) for size, note, _at in notes] == [(1, head.checkpoint)]


def test_checkpoints_come_every_n_entries_every_t_seconds_and_on_demand(
    archive: Archive, tmp_path: Path
) -> None:
    settings = load_settings(
        {
            "ARCHIVE_DATA_DIR": str(tmp_path / "keys"),
            "ARCHIVE_LEDGER_CHECKPOINT_ENTRIES": "3",
            "ARCHIVE_LEDGER_CHECKPOINT_SECONDS": "3600",
            "ARCHIVE_LEDGER_CHECKPOINT_DIR": str(tmp_path / "witness"),
        }
    )
    with Sequencer(archive, settings) as sequencer:
        signed = []
        for step in range(7):
            archive.store(make_snapshot(step))
            signed.append(sequencer.run().checkpoint)
        assert signed == [1, None, None, 4, None, None, 7]  # the first, then every 3
        assert sequencer.run(checkpoint=True).checkpoint is None  # 7 is signed already
        archive.store(make_snapshot(8))
        assert sequencer.run().checkpoint is None
        assert sequencer.run(checkpoint=True).checkpoint == 8  # on demand
        head = sequencer.tree()
        assert head is not None
        sequencer.settings = dataclasses.replace(settings, ledger_checkpoint_seconds=0.0)
        archive.store(make_snapshot(9))
        assert sequencer.run().checkpoint == 9  # the time has come
    folder = tmp_path / "witness"
    assert [size for size, _path in copies(folder)] == [9, 8, 7, 4, 1]
    assert (folder / "ledger.pub").read_text().strip() == head.key
    assert (folder / "checkpoint-000000000008").read_text() == head.checkpoint
    assert not os.access(folder / "checkpoint-000000000008", os.W_OK) or os.getuid() == 0


def test_a_process_without_the_ledgers_key_sequences_but_signs_nothing(
    archive: Archive, settings: Settings, tmp_path: Path
) -> None:
    archive.store(make_snapshot(1))
    with Sequencer(archive, settings) as sequencer:
        sequencer.run()
    elsewhere = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "other-host")})
    archive.store(make_snapshot(2))
    with Sequencer(archive, elsewhere) as other:
        report = other.run(checkpoint=True)
    assert report.logged == 1 and report.checkpoint is None
    assert "this process signs no checkpoints" in report.notes[0]
    assert not key_path(elsewhere).exists()  # no second key made


def test_a_damaged_queue_row_is_dropped_and_named(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    from imixs_archive.storage.model import ARCHIVE_LEDGER_QUEUE

    slot = now_ms() // 60_000
    backend.put(
        ARCHIVE_LEDGER_QUEUE,
        [{"slot": slot, "subject": "x", "entry_key": "1", "entry": json.dumps({"kind": "?"})}],
    )
    with Sequencer(archive, settings) as sequencer:
        report = sequencer.run()
    assert report.damaged == 1 and report.logged == 0
    assert list(archive.ledger.queued(slot)) == []


def test_the_queue_is_read_from_its_oldest_unfinished_minute(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    """Entries queued long before the ledger started are taken in at its start; later, a
    round reads only the last minutes (and any it has not finished)."""
    from imixs_archive.storage.model import ARCHIVE_LEDGER_QUEUE

    archive.store(make_snapshot(3))
    three_hours_ago = now_ms() - 3 * 3600_000
    entry = Entry(STORED, _sid(2), three_hours_ago, "t", "ab" * 32)
    row = {"subject": entry.subject, "entry_key": f"{three_hours_ago:013d}.0.x"}
    backend.put(
        ARCHIVE_LEDGER_QUEUE, [{**row, "slot": three_hours_ago // 60_000, "entry": entry.queued()}]
    )
    with Sequencer(archive, settings) as sequencer:
        head = sequencer.start()
        assert head.queue_from == three_hours_ago // 60_000
        report = sequencer.run()
        head = sequencer.tree()
    assert report.logged == 1 and report.abandoned == 1  # snapshot 2 was never stored
    assert head is not None and head.queue_from == now_ms() // 60_000 - 5
    assert Frontier.from_bytes(head.size, head.frontier).root() == head.root


def test_an_entry_queued_by_a_clock_far_behind_is_logged_late_not_lost(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    """A writer whose clock runs twenty minutes behind queues into a minute the rounds have
    passed: the next pass over the whole queue logs it, and verify finds nothing wrong."""
    from imixs_archive.ledger import sequencer as sequencer_module
    from imixs_archive.ledger.verify import verify_ledger
    from imixs_archive.storage.model import ARCHIVE_LEDGER_QUEUE

    archive.store(make_snapshot(1))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain()
        late = make_snapshot(2)
        archive.store(late)
        late_id = _sid(2)
        queued = [row for row in backend.scan(ARCHIVE_LEDGER_QUEUE) if row["subject"] == late_id]
        assert len(queued) == 1
        behind = now_ms() - 20 * 60_000  # as that writer's clock had it
        backend.delete(
            ARCHIVE_LEDGER_QUEUE, {k: queued[0][k] for k in ("slot", "subject", "entry_key")}
        )
        moved = Entry.from_queue(queued[0]["entry"])
        backend.put(
            ARCHIVE_LEDGER_QUEUE,
            [
                {
                    "slot": behind // 60_000,
                    "subject": late_id,
                    "entry_key": f"{behind:013d}.0.late",
                    "entry": Entry(
                        moved.kind, moved.target, behind, moved.by, moved.digest
                    ).queued(),
                }
            ],
        )
        assert sequencer.run().logged == 0  # the minutes since the last round only
        sequencer._last_full_pass -= sequencer_module.FULL_PASS_MS  # ten minutes later
        assert sequencer.run().logged == 1
    assert archive.ledger.subject(late_id) is not None
    assert verify_ledger(archive, settings).ok


def test_a_replica_without_the_key_leaves_the_lease_to_one_that_signs(
    archive: Archive, settings: Settings, tmp_path: Path
) -> None:
    """Two serve replicas, one without the key: its rounds log, then give the lease up, so
    the one with the key signs at its next round instead of finding the lease taken."""
    from imixs_archive.ledger.schedule import LedgerSchedule

    with Sequencer(archive, settings) as first:
        first.drain(checkpoint=True)  # the ledger and its key, made where the key is
    archive.store(make_snapshot(1))
    keyless = LedgerSchedule(archive, load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "o")}))
    done = keyless.run_once()
    assert done is not None and done.logged == 1 and done.checkpoint is None
    with Sequencer(archive, settings) as signing:
        report = signing.run(checkpoint=True)
    assert not report.busy and report.checkpoint == 1
    keyless.close()


class _QueueTooLong(DelegatingBackend):
    """A store whose pass over the whole ledger queue fails, as Cassandra's does once the
    queue holds more tombstones than a read may walk (logged entries' deletes)."""

    def scan(
        self, table: Table, partition: Mapping[str, Any] | None = None, **kw: Any
    ) -> Iterator[Row]:
        if table is ARCHIVE_LEDGER_QUEUE and partition is None:
            raise StoreError("Cassandra refused reading archive_ledger_queue: too many tombstones")
        return super().scan(table, partition, **kw)


def test_a_queue_that_cannot_be_read_whole_is_still_sequenced(
    backend: Backend, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """The whole queue's pass (at a new ledger's start and every ten minutes) is a safety
    net: when the store refuses it, the rounds read the minutes since the oldest
    unfinished one, and log everything."""
    refusing = _QueueTooLong(backend)
    with Archive(refusing) as archive, caplog.at_level(logging.WARNING):
        archive.store(make_snapshot(1))
        archive.store(make_snapshot(2))
        with Sequencer(archive, settings) as sequencer:
            report = sequencer.drain(checkpoint=True)
        assert report.logged == 2 and not report.busy
        assert _kinds(archive) == [(STORED, _sid(1)), (STORED, _sid(2))]
    assert "the whole queue could not be read" in caplog.text


def test_changes_one_process_makes_in_one_millisecond_keep_their_order(
    archive: Archive, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries queued in the same millisecond (a fast store, a coarse clock) are logged in
    the order one process made them, not by chance."""
    _Clock(monkeypatch).stop()
    steps = range(1, 25)
    for step in steps:
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    assert _kinds(archive) == [(STORED, _sid(step)) for step in steps]


class _Clock:
    """The archive's clock, ``offset`` ms ahead of the real one, for every module that
    queues or sequences the ledger's entries: minutes pass in a test at once."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from imixs_archive.archive import snapshots
        from imixs_archive.ledger import books, store_entry, verify

        self.offset = 0
        self.stopped: int | None = None
        for module in (books, store_entry, snapshots, sequencer_module, verify):
            monkeypatch.setattr(module, "now_ms", self)

    def __call__(self) -> int:
        return self.stopped if self.stopped is not None else now_ms() + self.offset

    def stop(self) -> None:
        """The same millisecond from now on."""
        self.stopped = self()

    def minutes(self, count: int) -> None:
        self.offset += count * 60_000


def _command_env(
    backend: Backend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """The environment that points the command line at ``backend``'s store."""
    from imixs_archive.storage.sqlite.backend import SQLiteBackend
    from support.backends import cassandra_env

    if isinstance(backend, SQLiteBackend):
        monkeypatch.setenv("ARCHIVE_DATA_DIR", str(backend.data_dir))
    else:
        for name, value in cassandra_env(
            request.getfixturevalue("cassandra_session_keyspace")
        ).items():
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("ARCHIVE_LEDGER_KEY", str(tmp_path / "keys" / "ledger.key"))


def test_snapshots_imported_before_the_ledger_ran_and_deleted_later_are_logged_stored_then_deleted(
    archive: Archive,
    backend: Backend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 46, item 2: an import without serve (nothing sequences), three of its snapshots
    deleted minutes later, the ledger first run twenty minutes after. A round reads the
    queue a few thousand entries at a time (20 here, for 5,000): the first round read the
    stores of the deleted snapshots but not their deletions, found the snapshots gone and
    dropped the stores as never made; the log held deletions of snapshots it never logged
    as stored. Every store and every deletion is logged, in order."""
    from imixs_archive.cli import main

    clock = _Clock(monkeypatch)
    monkeypatch.setattr(sequencer_module, "ROUND_ENTRIES", 20)
    stored = [_sid(step) for step in range(60)]
    for step in range(60):
        if step % 20 == 0:
            clock.minutes(1)  # twenty a minute
        archive.store(make_snapshot(step))
    clock.minutes(4)
    deleted = [_sid(1), _sid(25), _sid(59)]
    for snapshot_id in deleted:
        archive.delete(snapshot_id)
        clock.offset += 1  # made one after the other (the same millisecond is no order)
    clock.minutes(20)
    _command_env(backend, tmp_path, monkeypatch, request)
    assert main(["ledger", "verify", "--json"]) == 0, capsys.readouterr()
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["checked"] == 63 and report["pending"] == 0
    kinds = _kinds(archive)
    assert sorted(target for kind, target in kinds if kind == STORED) == sorted(stored)
    assert [target for kind, target in kinds if kind == DELETED] == deleted
    for snapshot_id in deleted:
        assert [kind for kind, target in kinds if target == snapshot_id] == [STORED, DELETED]
    assert all(entry.digest for entry in _log(archive) if entry.kind == STORED)


class _DeletedWhileChecked(Sequencer):
    """A sequencer during whose round another process deletes a snapshot: right after the
    round read the queue, before it looks whether the store shows the snapshot."""

    victim = ""

    def _agrees(self, entry: Entry) -> bool:
        if entry.target == self.victim:
            self.archive.delete(self.victim)
            self.victim = ""
        return super()._agrees(entry)


def test_a_store_older_than_the_wait_whose_snapshot_is_deleted_during_the_round_is_logged(
    archive: Archive, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deletion's entry is queued after the round read the queue: the store is not
    dropped as never made (its snapshot is gone because it was deleted), and the deletion
    follows it in the next round."""
    clock = _Clock(monkeypatch)
    archive.store(make_snapshot(1))
    clock.offset += 1  # made one after the other (the same millisecond is no order)
    archive.store(make_snapshot(2))
    clock.minutes(20)
    with _DeletedWhileChecked(archive, settings) as sequencer:
        sequencer.victim = _sid(1)
        report = sequencer.run()
        assert (report.logged, report.abandoned) == (2, 0)
        sequencer.drain()
    assert _kinds(archive) == [(STORED, _sid(1)), (STORED, _sid(2)), (DELETED, _sid(1))]


class _AnsweredAsFailed(DelegatingBackend):
    """A store whose compare and set of the ledger's lease is made but answered as failed,
    as Cassandra's lightweight transaction is when it timed out under load, was made, and
    its retry then found the value already set."""

    def replace(
        self, table: Table, key: Mapping[str, Any], column: str, expected: Any, value: Any
    ) -> bool:
        made = super().replace(table, key, column, expected, value)
        return made and key != {"name": sequencer_module.LEASE}


def test_a_lease_taken_but_answered_as_failed_is_held(backend: Backend, settings: Settings) -> None:
    """Not 'another process took the lease just now' (exit 75 for ledger checkpoint): the
    lease holds this process's own write."""
    with Archive(_AnsweredAsFailed(backend)) as archive, Sequencer(archive, settings) as sequencer:
        archive.store(make_snapshot(1))
        assert sequencer.run().logged == 1
        archive.store(make_snapshot(2))
        report = sequencer.run(checkpoint=True)
        assert not report.busy and report.logged == 1, report.busy


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_process_queues_under_a_token_of_its_own() -> None:
    """Queue keys end in the process's token and count: a child forked from a process that
    queued makes its own token at the fork, before any of its threads queues (two threads
    that each saw the fork first made one each)."""
    from imixs_archive.ledger.books import _MADE

    parent = _MADE.next().split(".")[0]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: writes its next key's token, and nothing else
        os.write(write, _MADE.next().split(".")[0].encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as answer:
        child = answer.read()
    assert len(child) == len(parent) == 12 and child != parent
    assert _MADE.next().split(".")[0] == parent


def test_the_schedule_logs_a_repeated_error_once_and_a_good_round_ends_it(
    archive: Archive, settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """``serve``'s ledger rounds: a store gone away is a warning once while it lasts
    (``last_error`` says it), the next good round ends it, and closing still logs what is
    queued and gives the lease up."""
    from imixs_archive.ledger.schedule import LedgerSchedule

    schedule = LedgerSchedule(archive, dataclasses.replace(settings, ledger_interval=0.05))
    real_drain = schedule.sequencer.drain
    failing = threading.Event()
    failing.set()

    def drain(**kwargs: Any) -> Any:
        if failing.is_set():
            raise StoreError("the store went away")
        return real_drain(**kwargs)

    monkeypatch.setattr(schedule.sequencer, "drain", drain)
    caplog.set_level(logging.WARNING, logger="imixs_archive.ledger.schedule")
    schedule.start()
    deadline = time.monotonic() + 20
    while schedule.runs < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert schedule.runs >= 3 and schedule.last is None
    assert schedule.last_error == "the store went away"
    assert [r.getMessage() for r in caplog.records] == [
        "ledger: sequencing failed: the store went away"
    ]
    archive.store(make_snapshot(1))
    failing.clear()
    while schedule.last is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert schedule.last is not None and schedule.last_error == ""
    archive.store(make_snapshot(2))
    schedule.close()
    assert [e.subject for e in _log(archive)][-1] == _sid(2)
    with Sequencer(archive, settings) as other:  # the lease was given up
        assert not other.run().busy
