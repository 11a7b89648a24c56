"""Work spread over worker processes: each batch once, every message back, failures end
the run with the error the worker met."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError, NotFoundError, StoreError
from imixs_archive.services.workers import AHEAD, Spread, Standby, run_in_workers
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support import worker_tasks
from support.snapshots import make_snapshot
from support.worker_tasks import (
    DiesTakingABatch,
    FailOn,
    PicklingRecorded,
    SlowInWorkers,
    StoreSteps,
)

pytestmark = pytest.mark.both_stores  # store-facing: worker processes writing one store at once


def _collect(spread: Spread, task: Any, batches: Any) -> list[Any]:
    messages: list[Any] = []
    run_in_workers(spread, task, batches, messages.append)
    return messages


def test_every_batch_runs_once_in_the_workers_on_the_same_store(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    handed: list[list[int]] = []

    def batches() -> Iterator[list[int]]:  # more than the workers are given at once
        for start in range(0, 24, 2):
            handed.append([start, start + 1])
            yield handed[-1]

    (meet := tmp_path / "meet").mkdir()
    task = StoreSteps(meet=meet, parties=2)  # each holds its first batch until both have one
    messages = _collect(Spread(store_settings, 2), task, batches())
    stored = sorted(step for kind, step, _pid in messages if kind == "stored")
    assert stored == list(range(24))
    assert len(handed) == 12 > 2 * AHEAD
    finished = [(count, pid) for kind, count, pid in messages if kind == "finished"]
    assert len(finished) == 2 and sum(count for count, _pid in finished) == 24
    assert all(count > 0 for count, _pid in finished)  # both worked
    workers = {pid for _kind, _value, pid in messages}
    assert len(workers) == 2
    for step in range(24):  # the parent's archive sees what the workers stored
        assert archive.load(str(make_snapshot(step).get_first("$uniqueid"))) == make_snapshot(step)


def test_each_process_runs_its_batches_and_finish_inside_one_session(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    """The session (an import's ``durable_at_end``) spans every batch of a process and
    ends after its ``finish``, in the workers and in the calling process alike."""
    messages: list[Any] = []
    (sessions := tmp_path / "sessions").mkdir()
    task = StoreSteps(sessions)
    run_in_workers(
        Spread(store_settings, 3), task, ([n] for n in range(12)), messages.append, archive
    )
    counts = {pid: count for kind, count, pid in messages if kind == "finished"}
    assert len(counts) == 3 and sum(counts.values()) == 12  # the asserts in the task held
    ended = {int(path.name): int(path.read_text()) for path in sessions.iterdir()}
    assert ended == counts  # each session ended once, after its process's last batch
    assert not task.in_session  # here too


def test_a_worker_reports_in_order(store_settings: Settings) -> None:
    messages = _collect(Spread(store_settings, 1), StoreSteps(), iter([[3, 1], [2]]))
    assert [m[:2] for m in messages] == [
        ("stored", 3),
        ("stored", 1),
        ("stored", 2),
        ("finished", 3),
    ]


@pytest.mark.parametrize(
    ("how", "error"),
    [("store", StoreError), ("missing", NotFoundError), ("bug", ArchiveError)],
)
def test_an_error_let_out_by_a_task_ends_the_run_with_it(
    store_settings: Settings, how: str, error: type[ArchiveError]
) -> None:
    messages: list[Any] = []
    batches = ([n] for n in range(50))
    with pytest.raises(error) as raised:
        run_in_workers(Spread(store_settings, 2), FailOn(7, how), batches, messages.append)
    assert type(raised.value) is error
    assert {"store": "the store went away", "missing": "no such snapshot"}.get(
        how, "ValueError: a bug"
    ) in str(raised.value)
    done = [item for _kind, item, _pid in messages]
    assert 7 not in done and len(done) < 49  # the run stopped


def test_a_worker_that_dies_ends_the_run(store_settings: Settings) -> None:
    with pytest.raises(
        ArchiveError, match=r"ended unexpectedly \(exit code -9\).*run the command again"
    ):
        _collect(Spread(store_settings, 2), FailOn(5, "die"), ([n] for n in range(40)))


@pytest.mark.timeout(60)
def test_a_worker_killed_holding_a_batch_it_had_not_reported_ends_the_run(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    """The batch the worker took is counted as queued for ever: this process does the
    rest, waits for no batch for ever, and the run ends with the worker's death."""
    messages: list[Any] = []
    with pytest.raises(ArchiveError, match=r"ended unexpectedly \(exit code -9\)"):
        run_in_workers(
            Spread(store_settings, 2),
            DiesTakingABatch(tmp_path / "ready"),
            ([n] for n in range(6)),
            messages.append,
            archive,
        )
    done = sorted(item for _kind, item, pid in messages if pid == os.getpid())
    assert len(done) == 5  # all but the one the worker took


def test_no_batches_no_work(store_settings: Settings) -> None:
    messages = _collect(Spread(store_settings, 2), StoreSteps(), iter([]))
    assert [m[:2] for m in messages] == [("finished", 0), ("finished", 0)]


def _slow_parent(
    tmp_path: Path, long_batches: bool = False
) -> tuple[subprocess.Popen[str], set[int]]:
    """A process running ``Slow`` (or ``LongBatches``) in two workers, in a session of its
    own; the workers' pids once both reported."""
    SQLiteBackend(tmp_path / "store").close()
    script = (
        "from support.worker_tasks import run_slow; "
        f"run_slow({str(tmp_path / 'store')!r}, {long_batches})"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with (tmp_path / "parent.err").open("wb") as err:  # its stacks, if it hangs (below)
        parent = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-c", script],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
            start_new_session=True,
        )
    assert parent.stdout is not None
    pids: set[int] = set()
    while len(pids) < 2:
        line = parent.stdout.readline()
        assert line, "the parent ended early"
        if line.startswith("item"):
            pids.add(int(line.split()[2]))
    return parent, pids


def _running(pid: int) -> bool:
    """Whether the process runs (one that ended but is not reaped yet, a zombie, does not:
    the init of a container may reap orphans late)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def _gone(pids: set[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_running(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _communicate(parent: subprocess.Popen[str], tmp_path: Path, timeout: float) -> str:
    """The parent's output once it ended; if it does not end in time, the test fails with
    the parent's stacks (faulthandler, on SIGABRT) and the process group is killed (left
    running, it broke a later test with its pipe and its warnings)."""
    try:
        out, _ = parent.communicate(timeout=timeout)
        return out
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{parent.pid}/status").read_text()
        signals = [line for line in status.splitlines() if line.startswith(("Sig", "ShdPnd"))]
        mine = Path("/proc/self/status").read_text()
        signals += ["test:"] + [line for line in mine.splitlines() if line.startswith("Sig")]
        parent.send_signal(signal.SIGABRT)
        parent.communicate(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)  # its workers
        raise AssertionError(
            f"the parent did not end in {timeout} s: {signals}\n"
            f"{(tmp_path / 'parent.err').read_text()}"
        ) from None


def test_ctrl_c_stops_the_workers_with_the_parent(tmp_path: Path) -> None:
    parent, workers = _slow_parent(tmp_path)
    os.killpg(parent.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    out = _communicate(parent, tmp_path, timeout=30)
    assert parent.returncode == 130 and "interrupted" in out
    assert _gone(workers, within=10)


def test_workers_end_when_their_parent_is_killed(tmp_path: Path) -> None:
    parent, workers = _slow_parent(tmp_path)
    parent.kill()  # no chance to stop its workers
    _communicate(parent, tmp_path, timeout=10)
    assert _gone(workers, within=20)


def test_workers_busy_with_a_batch_stop_with_their_parent(tmp_path: Path) -> None:
    """A worker does not finish the batch it holds once its parent is gone: it stops in the
    middle of it, as a write it makes may be one nobody waits for. The batches here never
    end, so a worker gone at all stopped in the middle of one: no bound on how soon (it
    was 0.5 s, a bet on the machine's load), a minute to see it."""
    parent, workers = _slow_parent(tmp_path, long_batches=True)
    try:
        parent.kill()
        _communicate(parent, tmp_path, timeout=60)
        assert _gone(workers, within=60)
    finally:
        for pid in workers:  # a worker that does not stop would run for ever
            if _running(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_this_process_works_too_beside_the_workers(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    messages: list[Any] = []
    batches = ([step] for step in range(30))
    (meet := tmp_path / "meet").mkdir()
    task = StoreSteps(meet=meet, parties=3)
    run_in_workers(Spread(store_settings, 3), task, batches, messages.append, archive)
    stored = sorted(step for kind, step, _pid in messages if kind == "stored")
    assert stored == list(range(30))
    by_pid = {pid for _kind, _value, pid in messages}
    assert os.getpid() in by_pid and len(by_pid) == 3  # here and two workers
    finished = [count for kind, count, _pid in messages if kind == "finished"]
    assert len(finished) == 3 and sum(finished) == 30
    assert all(
        archive.exists(str(make_snapshot(step).get_first("$uniqueid"))) for step in range(30)
    )


def test_no_batch_waits_for_a_busy_worker_while_this_process_is_idle(
    archive: Archive, store_settings: Settings
) -> None:
    """The batches wait in one queue: the worker, busy with its first, takes no other
    while this process works through the rest (a queue per worker held two for it)."""
    messages: list[Any] = []
    task = SlowInWorkers(seconds=2.0)
    run_in_workers(
        Spread(store_settings, 2), task, ([n] for n in range(20)), messages.append, archive
    )
    assert sorted(item for _kind, item, _pid in messages) == list(range(20))
    in_worker = [item for _kind, item, pid in messages if pid != os.getpid()]
    assert len(in_worker) <= 1, in_worker


def test_workers_started_ahead_take_the_work_when_as_many_are_needed(
    archive: Archive, store_settings: Settings
) -> None:
    ahead = Standby(1, ("support.worker_tasks",))
    messages: list[Any] = []
    batches = ([step] for step in range(6))
    spread = Spread(store_settings, 2, standby=ahead)
    run_in_workers(spread, StoreSteps(), batches, messages.append, archive)
    assert sorted(step for kind, step, _pid in messages if kind == "stored") == list(range(6))
    finished = {pid for kind, _count, pid in messages if kind == "finished"}
    assert finished == {os.getpid(), ahead.processes[0].pid}
    assert ahead.given


def test_workers_started_ahead_in_another_number_are_sent_home(
    archive: Archive, store_settings: Settings
) -> None:
    ahead = Standby(2)
    messages: list[Any] = []
    spread = Spread(store_settings, 2, standby=ahead)  # one worker beside this process
    run_in_workers(spread, StoreSteps(), ([n] for n in range(4)), messages.append, archive)
    assert sorted(step for kind, step, _pid in messages if kind == "stored") == list(range(4))
    pids = {pid for _kind, _value, pid in messages}
    assert not pids & {process.pid for process in ahead.processes}
    for process in ahead.processes:  # dismissed: they end by themselves
        process.join(timeout=60)
        assert process.exitcode == 0


def test_the_task_is_pickled_when_given_not_later_on_a_queue_thread(
    archive: Archive, store_settings: Settings
) -> None:
    """A queue pickles on a thread of its own, later: by then this process may have
    changed the task working on it, and a failure to pickle reached no one (the run
    waited for ever)."""
    worker_tasks.PICKLED_IN.clear()
    messages: list[Any] = []
    task = PicklingRecorded()
    run_in_workers(
        Spread(store_settings, 2), task, ([n] for n in range(4)), messages.append, archive
    )
    assert sorted(item for _kind, item, _pid in messages) == list(range(4))
    assert [threading.current_thread().name] == worker_tasks.PICKLED_IN


class _Unpicklable(PicklingRecorded):
    def __init__(self) -> None:
        self.lock = threading.Lock()  # cannot be pickled


def test_a_task_that_cannot_be_pickled_fails_at_once_and_stops_the_workers(
    archive: Archive, store_settings: Settings
) -> None:
    ahead = Standby(1)
    spread = Spread(store_settings, 2, standby=ahead)
    with pytest.raises(TypeError, match="pickle"):
        run_in_workers(spread, _Unpicklable(), iter([[1]]), lambda _m: None, archive)
    assert not any(process.is_alive() for process in ahead.processes)
