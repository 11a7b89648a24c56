"""Tasks for ``services.workers`` tests: importable by name in a spawned worker."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import NotFoundError, StoreError
from imixs_archive.services.workers import Send
from support.snapshots import make_snapshot


class _Plain:
    def session(self, archive: Archive) -> AbstractContextManager[None]:
        return nullcontext()

    def finish(self, send: Send) -> None:
        pass


class StoreSteps:
    """Stores snapshot ``step`` of the default instance for each item; reports each with
    the worker's pid, and the worker's count when it finishes. ``sessions``: a folder
    where each session's end is written down (a file named by the pid)."""

    def __init__(
        self, sessions: Path | None = None, meet: Path | None = None, parties: int = 0
    ) -> None:
        self.count = 0
        self.sessions = sessions
        self.in_session = False
        self.meet = meet
        self.parties = parties

    def run(self, archive: Archive, batch: list[int], send: Send) -> None:
        assert self.in_session or self.sessions is None
        if self.meet is not None and not self.count:
            _meet(self.meet, self.parties)
        for step in batch:
            archive.store(make_snapshot(step))
            self.count += 1
            send(("stored", step, os.getpid()))

    def finish(self, send: Send) -> None:
        assert self.in_session or self.sessions is None
        send(("finished", self.count, os.getpid()))

    @contextmanager
    def session(self, archive: Archive) -> Iterator[None]:
        self.in_session = True
        yield
        self.in_session = False
        if self.sessions is not None:
            (self.sessions / str(os.getpid())).write_text(str(self.count))


def _meet(folder: Path, parties: int) -> None:
    """Wait until ``parties`` processes have come here (each with its first batch), so
    that a test sees every process work however fast the first ones are."""
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(folder.iterdir())) < parties:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(list(folder.iterdir()))} of {parties} processes came")
        time.sleep(0.01)


class FailOn(_Plain):
    """Reports items; at ``item`` fails as ``how`` says: ``store`` (StoreError), ``missing``
    (NotFoundError), ``bug`` (ValueError) or ``die`` (SIGKILL). Items after it take
    ``later`` seconds each, so that a run that goes on after the failure shows: trivial
    items, all done in the moment the failure takes to reach the parent, would not."""

    def __init__(self, item: Any, how: str, later: float = 0.1) -> None:
        self.item = item
        self.how = how
        self.later = later

    def run(self, archive: Archive, batch: list[Any], send: Send) -> None:
        for item in batch:
            if item == self.item:
                self._fail()
            if item > self.item:
                time.sleep(self.later)
            send(("done", item, os.getpid()))

    def _fail(self) -> None:
        if self.how == "store":
            raise StoreError("the store went away")
        if self.how == "missing":
            raise NotFoundError("no such snapshot")
        if self.how == "bug":
            raise ValueError("a bug")
        os.kill(os.getpid(), signal.SIGKILL)


class Slow(_Plain):
    """Reports each item with the worker's pid, then sleeps a while: a run to interrupt."""

    def run(self, archive: Archive, batch: list[Any], send: Send) -> None:
        for item in batch:
            send(("item", item, os.getpid()))
            time.sleep(0.2)


class LongBatches(_Plain):
    """Each batch never ends, reporting as it goes: a worker busy with one when its parent
    is killed can only stop in the middle of it (however long the machine makes the test
    wait, the end of a batch never comes to stop it instead)."""

    def run(self, archive: Archive, batch: list[Any], send: Send) -> None:
        for item in batch:
            for step in itertools.count():
                send(("item", item, os.getpid()) if step == 0 else ("step", item, step))
                time.sleep(0.05)


class SlowInWorkers(_Plain):
    """Reports each item with the pid that ran it; slow in a worker, quick in the process
    that built the task."""

    def __init__(self, seconds: float) -> None:
        self.parent = os.getpid()
        self.seconds = seconds

    def run(self, archive: Archive, batch: list[Any], send: Send) -> None:
        for item in batch:
            if os.getpid() != self.parent:
                time.sleep(self.seconds)
            send(("item", item, os.getpid()))


PICKLED_IN: list[str] = []
"""The threads a ``PicklingRecorded`` was pickled in (in the process that pickled it)."""


class PicklingRecorded(_Plain):
    """Notes the thread that pickles it; reports each item with the worker's pid."""

    def __getstate__(self) -> dict[str, Any]:
        PICKLED_IN.append(threading.current_thread().name)
        return dict(self.__dict__)

    def run(self, archive: Archive, batch: list[Any], send: Send) -> None:
        for item in batch:
            send(("item", item, os.getpid()))


def run_slow(data_dir: str, long_batches: bool = False) -> None:
    """A parent process for the interruption tests: prints each message as a line."""
    from imixs_archive.config import load_settings
    from imixs_archive.services.workers import Spread, run_in_workers

    # Ctrl-C as at a terminal. A job put in the background by a non-interactive shell (a
    # test run started with `&` from a script) starts with SIGINT ignored, and so did this
    # process then, inheriting it: the SIGINT of the test went unseen and it hung.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    settings = load_settings({"ARCHIVE_DATA_DIR": data_dir})
    try:
        task = LongBatches() if long_batches else Slow()
        run_in_workers(
            Spread(settings, 2), task, ([n] for n in range(1000)), lambda m: print(*m, flush=True)
        )
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise SystemExit(130) from None


class DiesTakingABatch(_Plain):
    """Reports items. In a worker, the process is killed right after it takes its first
    batch from the queue, before it can say so: the batch is gone and nobody runs it.
    The calling process holds its first batch until the worker took one (``ready``), so
    that the worker takes a batch, not the end of them."""

    def __init__(self, ready: Path) -> None:
        self.maker = os.getpid()
        self.ready = ready

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if os.getpid() != self.maker:  # unpickled in a worker, before its first batch
            from imixs_archive.services import workers

            take = workers._next_batch

            def take_and_die(inbox: Any, parent: int) -> Any:
                take(inbox, parent)
                self.ready.touch()
                os.kill(os.getpid(), signal.SIGKILL)

            workers._next_batch = take_and_die  # type: ignore[assignment]

    def run(self, archive: Archive, batch: list[Any], send: Send) -> None:
        deadline = time.monotonic() + 60
        while not self.ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        for item in batch:
            send(("done", item, os.getpid()))
