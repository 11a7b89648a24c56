"""``ledger verify`` beside writers (issue 48): a verify while another process stores and
deletes snapshots and sequences them into the log, and a verify stopped and resumed after
the log grew, report nothing (entries logged after the size they check are not
tampering); tampering within that size is still found, also beside a writer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshot_xml import seal, snapshot_xml
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import ArchiveError
from imixs_archive.ledger.books import Subject
from imixs_archive.ledger.entries import STORED, Entry
from imixs_archive.ledger.sequencer import RoundReport, Sequencer
from imixs_archive.ledger.tree import TreeState
from imixs_archive.ledger.verify import LedgerReport, verify_ledger
from imixs_archive.storage.base import Backend
from imixs_archive.storage.factory import open_backend
from imixs_archive.storage.model import ARCHIVE_LEDGER_ENTRIES, SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.tlog.merkle import leaf_hash
from support.snapshots import make_snapshot

WRITER = "0000c0de-0000-4000-8000-000000000001"
"""The process instance of the snapshots the writer stores."""
STORED_FIRST = 40


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """A key, a checkpoint folder, and a checkpoint every four entries: the writer's rounds
    sign checkpoints past the size a verify checks, in the store and the checkpoint folder."""
    return load_settings(
        {
            "ARCHIVE_DATA_DIR": str(tmp_path / "keys"),
            "ARCHIVE_LEDGER_CHECKPOINT_DIR": str(tmp_path / "witness"),
            "ARCHIVE_LEDGER_CHECKPOINT_ENTRIES": "4",
        }
    )


def _sid(step: int, origin: str | None = None) -> str:
    doc = make_snapshot(step) if origin is None else make_snapshot(step, origin=origin)
    return str(doc.get_first("$uniqueid"))


@pytest.fixture
def logged(archive: Archive, settings: Settings) -> Iterator[Archive]:
    """Forty snapshots, logged and signed."""
    for step in range(STORED_FIRST):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    yield archive


class _Writer(threading.Thread):
    """Another process beside the verify, as serve: it stores a snapshot, deletes one of
    the first forty (those the verify checked already and those it has not reached), and
    runs a sequencing round, again and again; a legal hold placed on its own snapshots."""

    def __init__(self, store_settings: Settings, settings: Settings) -> None:
        super().__init__(daemon=True)
        self.store_settings = store_settings
        self.settings = settings
        self.deletable = [_sid(step) for step in (0, 39, 2, 37, 5, 30, 8, 25, 11, 20)]
        self.logged = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self._changed = threading.Condition()

    def run(self) -> None:
        try:
            with (
                open_backend(self.store_settings) as backend,
                Archive(backend) as archive,
                Sequencer(archive, self.settings) as sequencer,
            ):
                self._work(archive, sequencer)
        except BaseException as exc:  # told to the test
            self.error = exc
        finally:
            with self._changed:
                self._changed.notify_all()

    def _work(self, archive: Archive, sequencer: Sequencer) -> None:
        import datetime as dt

        step = 1000
        while not self.stop.is_set():
            archive.store(make_snapshot(step, origin=WRITER))
            if step == 1000:
                archive.holds.place(WRITER, "audit", "mia", dt.datetime.now(dt.UTC))
            step += 1
            if self.deletable:
                archive.delete(self.deletable.pop(0))
            report = sequencer.run()
            with self._changed:
                self.logged += report.logged
                self._changed.notify_all()

    def logs(self, count: int) -> None:
        """Wait until the writer has logged ``count`` entries."""
        with self._changed:
            self._changed.wait_for(lambda: self.logged >= count or not self.is_alive(), 120)
        assert self.error is None, self.error
        assert self.logged >= count


def _paced(writer: _Writer, stops: dict[int, int]) -> Callable[[str, int], None]:
    """A verify's progress that starts the writer at its first entry, and at entry N waits
    until the writer has logged ``stops[N]`` entries: the writer's work falls within the
    pass, wherever the machine's scheduler puts the two."""
    seen = [0]

    def tick(stage: str, count: int) -> None:
        if stage != "entries":
            return
        seen[0] += count
        if seen[0] == 1:
            writer.start()
        if seen[0] in stops:
            writer.logs(stops[seen[0]])

    return tick


@pytest.fixture(params=["counted", "every row"])
def kept(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """As many changed subjects as a pass keeps by name (it counts the index rows), or
    fewer than change while it runs (it checks every row at the end)."""
    from imixs_archive.ledger import index_view, verify

    if request.param == "every row":
        monkeypatch.setattr(index_view, "KEPT", 2)
        monkeypatch.setattr(verify, "KEPT", 2)


def _beside_a_writer(
    archive: Archive, settings: Settings, store_settings: Settings
) -> tuple[LedgerReport, _Writer]:
    writer = _Writer(store_settings, settings)
    try:
        report = verify_ledger(archive, settings, progress=_paced(writer, {3: 12, 20: 30}))
    finally:
        writer.stop.set()
        if writer.is_alive():
            writer.join(120)
    assert writer.error is None, writer.error
    return report, writer


@pytest.mark.usefixtures("kept")
def test_a_verify_while_another_process_logs_reports_nothing(
    logged: Archive, settings: Settings, store_settings: Settings
) -> None:
    """Issue 48: 631-740 'the index was changed' problems, exit 5, while serve logged."""
    report, writer = _beside_a_writer(logged, settings, store_settings)
    assert writer.logged >= 30  # the log grew past the size checked while it ran
    assert report.problems == [] and report.ok, report.problems
    assert report.warnings == [], report.warnings  # the hold placed meanwhile included
    assert (report.size, report.checked) == (STORED_FIRST, STORED_FIRST)
    with Sequencer(logged, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    again = verify_ledger(logged, settings)
    assert again.ok and again.problems == [], again.problems
    assert again.size == STORED_FIRST + writer.logged


def _around(backend: Backend, settings: Settings, step: int) -> str:
    """A snapshot with this archive's seal written straight into the store, no entry."""
    other = make_snapshot(step, origin="f00d0000-0000-4000-8000-000000000001")
    scratch_dir = Path(settings.data_dir) / f"elsewhere-{step}"
    with SQLiteBackend(scratch_dir) as scratch, Archive(scratch) as elsewhere:
        elsewhere.store(other)
        row = scratch.get(SNAPSHOTS, {"snapshot": str(other.get_first("$uniqueid"))})
    assert row is not None
    backend.put(SNAPSHOTS, [row])
    return str(row["snapshot"])


def _forge_index(archive: Archive, snapshot_id: str, idx: int) -> None:
    """An index row logging a snapshot as stored by entry ``idx``, which is not about it:
    the pass over the store then takes the snapshot for logged."""
    digest = archive.stored_digest(snapshot_id)
    assert digest is not None
    archive.ledger.put_subjects([Subject(snapshot_id, idx, STORED, digest.digest)])


def _tamper(archive: Archive, backend: Backend, settings: Settings) -> tuple[str, str, str]:
    """Three changes within the size a verify checks: a row forged to read cleanly, and two
    snapshots written around the archive whose index rows were forged, one naming an entry
    of another snapshot, one an entry far past the log."""
    altered = _sid(17)
    row = backend.get(SNAPSHOTS, {"snapshot": altered})
    assert row is not None
    xml = snapshot_xml(backend, row).replace(b">snapshot-workitem<", b">forged-workitem<", 1)
    backend.put(SNAPSHOTS, [{"snapshot": altered, "data": seal(xml)}])
    hidden = _around(backend, settings, 70)
    _forge_index(archive, hidden, 12)
    far = _around(backend, settings, 71)
    _forge_index(archive, far, 10**9)
    return altered, hidden, far


def _found(report: LedgerReport, altered: str, hidden: str, far: str) -> None:
    assert not report.ok and report.altered == [altered]
    index = [p for p in report.problems if "the index was changed" in p]
    assert sorted(index) == sorted(
        f"the ledger's index names entry {idx} for {subject}, which the log does not bear "
        "out (the index was changed)"
        for idx, subject in ((12, hidden), (10**9, far))
    ), report.problems


def test_tampering_within_the_size_checked_is_found(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    altered, hidden, far = _tamper(logged, backend, settings)
    _found(verify_ledger(logged, settings), altered, hidden, far)


@pytest.mark.usefixtures("kept")
def test_tampering_within_the_size_checked_is_found_beside_a_writer(
    logged: Archive, backend: Backend, settings: Settings, store_settings: Settings
) -> None:
    altered, hidden, far = _tamper(logged, backend, settings)
    report, _writer = _beside_a_writer(logged, settings, store_settings)
    _found(report, altered, hidden, far)


def _stopped_at(archive: Archive, settings: Settings, entries: int) -> None:
    seen = [0]

    def stop(stage: str, count: int) -> None:
        seen[0] += count
        if stage == "entries" and seen[0] == entries:
            raise ArchiveError("stopped")

    with pytest.raises(ArchiveError, match="stopped"):
        verify_ledger(archive, settings, progress=stop)


def _grow(archive: Archive, settings: Settings) -> int:
    """What a writer does between a verify's stop and its resumption: stores, deletions of
    snapshots the stopped pass had checked and of ones it had not, logged and signed."""
    for step in range(60, 70):
        archive.store(make_snapshot(step, origin=WRITER))
    for step in (1, 3, 30, 35):
        archive.delete(_sid(step))
    with Sequencer(archive, settings) as sequencer:
        return sequencer.drain(checkpoint=True).logged


@pytest.mark.usefixtures("kept")
def test_a_verify_resumed_after_the_log_grew_reports_nothing(
    logged: Archive, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from imixs_archive.ledger import verify as verify_module

    monkeypatch.setattr(verify_module, "SAVE_EVERY", 8)
    _stopped_at(logged, settings, 20)
    assert _grow(logged, settings) == 14
    report = verify_ledger(logged, settings)
    assert report.resumed_at == 16 and report.problems == [] and report.ok, report.problems
    assert (report.size, report.checked) == (STORED_FIRST, STORED_FIRST)
    assert any("the ledger's last checkpoint: 54 entries" in c for c in report.checkpoints)
    assert verify_ledger(logged, settings).ok  # the next pass checks the 54


def test_a_log_reordered_before_a_verify_resumed_after_it_grew_is_found(
    logged: Archive, backend: Backend, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two entries the stopped pass had not reached yet swapped, their index rows with
    them: only the tree tells, and the checkpoints signed since are past the size the
    resumed pass checks. Their consistency with the tree it computes does."""
    from imixs_archive.ledger import verify as verify_module

    monkeypatch.setattr(verify_module, "SAVE_EVERY", 8)
    _stopped_at(logged, settings, 20)
    _grow(logged, settings)
    at = next(i for i in range(20, 39) if _last_of_its_subject(logged, i, i + 1))
    first, second = logged.ledger.entry(at), logged.ledger.entry(at + 1)
    assert first is not None and second is not None
    for idx, moved in ((at, second), (at + 1, first)):
        row = {"bucket": 0, "idx": idx, "entry": moved.text}
        backend.put(ARCHIVE_LEDGER_ENTRIES, [{**row, "hash": leaf_hash(moved.text.encode())}])
        subject = Entry.decode(moved.text).subject
        row_now = logged.ledger.subject(subject)
        assert row_now is not None
        logged.ledger.put_subjects([Subject(subject, idx, row_now.kind, row_now.digest)])
    report = verify_ledger(logged, settings)
    assert report.resumed_at == 16 and not report.ok
    assert any(
        "the log's first 40 entries are not those the ledger's last checkpoint signed" in p
        for p in report.problems
    ), report.problems


def _last_of_its_subject(archive: Archive, *indexes: int) -> bool:
    """Whether each of these entries is its subject's last (its snapshot not deleted)."""
    for idx in indexes:
        logged = archive.ledger.entry(idx)
        assert logged is not None
        row = archive.ledger.subject(Entry.decode(logged.text).subject)
        if row is None or row.idx != idx:
            return False
    return True


class _SignsOnceTheHeadIsRead(Sequencer):
    """serve's sequencer, as a verify run in serve uses it: right after the verify read the
    ledger's head, it logs what a writer stored and signs a checkpoint, also into the
    checkpoint folder, before the verify reads the checkpoint folder's newest checkpoint."""

    def __init__(self, archive: Archive, settings: Settings, grow: Callable[[], None]) -> None:
        super().__init__(archive, settings)
        self._grow: Callable[[], None] | None = grow
        self._drained = False

    def drain(self, *, checkpoint: bool = False, rounds: int = 1000) -> RoundReport:
        report = super().drain(checkpoint=checkpoint, rounds=rounds)
        self._drained = True
        return report

    def tree(self) -> TreeState | None:
        head = super().tree()
        if self._drained and self._grow is not None:
            grow, self._grow = self._grow, None
            grow()
            self.run(checkpoint=True)
        return head


def test_a_checkpoint_signed_after_the_verify_read_the_head_is_no_cut_log(
    logged: Archive, settings: Settings
) -> None:
    """The checkpoint folder's newest checkpoint is larger than the log the verify checks:
    it was signed since, the log holds that many entries; the entries checked are its
    first ones."""

    def grow() -> None:
        for step in range(80, 86):
            logged.store(make_snapshot(step, origin=WRITER))

    with _SignsOnceTheHeadIsRead(logged, settings, grow) as serving:
        report = verify_ledger(logged, settings, sequencer=serving)
    assert report.problems == [] and report.ok, report.problems
    assert report.size == STORED_FIRST
    newest = "the checkpoint folder's newest checkpoint (checkpoint-000000000046): 46 entries"
    assert newest in report.checkpoints


def test_a_checkpoint_given_to_a_resumed_verify_below_where_it_resumed_is_checked(
    logged: Archive, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--since`` given to the run that resumes, of a size the stopped run had walked
    past: its tree is checked against the one computed, by a consistency proof. One of
    another log (eight entries in another order, signed with the key) is found; the
    log's own holds."""
    from imixs_archive.ledger import verify as verify_module
    from imixs_archive.ledger.checkpoints import sign_checkpoint
    from imixs_archive.ledger.keys import key_path, load_signer
    from imixs_archive.tlog.merkle import root_of

    monkeypatch.setattr(verify_module, "SAVE_EVERY", 16)
    signer = load_signer(key_path(settings))
    head = Sequencer(logged, settings).tree()
    assert signer is not None and head is not None
    leaves = [entry.leaf for entry in logged.ledger.entries(0, 8)]
    ours = sign_checkpoint(signer, head.origin, 8, root_of(leaves))
    leaves[2], leaves[3] = leaves[3], leaves[2]
    other = sign_checkpoint(signer, head.origin, 8, root_of(leaves))
    _stopped_at(logged, settings, 20)
    report = verify_ledger(logged, settings, since=other)
    assert report.resumed_at == 16 and not report.ok
    assert report.problems == [
        "the log's first 8 entries are not those the checkpoint given (--since) signed: the "
        "log was changed, reordered or rewritten"
    ]
    _stopped_at(logged, settings, 20)
    report = verify_ledger(logged, settings, since=ours)
    assert report.resumed_at == 16 and report.ok, report.problems
    assert "the checkpoint given (--since): 8 entries" in report.checkpoints
