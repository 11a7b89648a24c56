"""Work spread over worker processes, each with its own connection to the store.

The archive's work per snapshot (parsing XML, base64, hashing, compressing) is Python
holding the interpreter lock, so threads do not spread it over cores; processes do. The
CLI's ``import`` and ``backup`` hand batches of their items to ``jobs`` workers this way.
Several processes on one store are normal (see ``docs/architecture.md``), so a worker is
one more archive process: it opens the store from the same settings, runs a
:class:`WorkerTask` on each batch it takes, and sends messages back. The batches wait in
one queue that every process takes from (the parent too, when it works), at most two per
worker at a time, so the items may come from a generator of any length and no batch waits
behind a busy worker while another process is idle. The parent takes the messages in on
its own thread (the caller's), in the order each worker sent them.

What fails:
- an error the task lets out (an unreachable store: ``StoreError``) ends the run: the
  parent stops the other workers and raises an error of the same class with its message
  (a bug in a worker: an ``ArchiveError`` naming it);
- a worker that dies (killed, out of memory) ends the run with an ``ArchiveError`` naming
  its exit code. What the workers wrote before stays; every task here is idempotent, so
  the same command run again completes the rest;
- a parent that dies (killed: it could not stop its workers) takes them with it: a thread
  of each worker looks every ``ORPHAN_CHECK_S`` and ends the process at once, in the middle
  of a batch if need be (every write is idempotent and ordered for a crash anywhere), so
  that nothing goes on writing for a command that is gone.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from importlib import import_module
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any, Protocol

from imixs_archive.errors import ArchiveError

if TYPE_CHECKING:  # imported where used: the CLI imports this module before the archive's
    from imixs_archive.archive.snapshots import Archive
    from imixs_archive.config import Settings

MAX_JOBS = 4
"""Workers at most, whatever the cores: the store's single writer (SQLite) and the
parent's hand-outs are shared by all."""
AHEAD = 2
"""Batches waiting in the queue per worker."""
TAKE_S = 0.05
"""How long this process waits for a batch it knows was queued (a worker may have taken
it: the message saying so is on its way)."""
POLL_S = 0.5
"""How often the parent looks whether a worker it waits for is still alive."""
ORPHAN_CHECK_S = 0.02
"""How often a worker looks whether its parent is still alive."""

Send = Callable[[Any], None]


class WorkerTask(Protocol):
    """What a worker runs; picklable (a module-level class), built in the parent."""

    def run(self, archive: Archive, batch: Any, send: Send) -> None:
        """One batch (never None); ``send`` reports back (picklable values)."""

    def finish(self, send: Send) -> None:
        """After the worker's last batch (state held across batches made final)."""

    def session(self, archive: Archive) -> AbstractContextManager[None]:
        """Around a worker's batches and its ``finish`` (and the calling process's, when it
        works too): for instance ``Archive.storage.durable_at_end``, one sync per process."""


@dataclass(frozen=True)
class Spread:
    """Work in ``jobs`` worker processes, each opening the store from ``settings``."""

    settings: Settings
    jobs: int
    least: int = 1
    """Fewer items than this stay in the calling process: starting a worker costs a new
    interpreter (about 0.2 s of CPU), more than a few small items take."""
    standby: Standby | None = None
    """Workers started ahead, taken when there are as many as the run needs."""


class Standby:
    """Worker processes started before their work is known: each starts its interpreter
    and imports ``warm`` (some 0.2 s) while the caller still gets ready, then waits for
    its task. :func:`run_in_workers` gives them one, or :meth:`dismiss` sends them home."""

    def __init__(self, count: int, warm: Sequence[str] = ()) -> None:
        context = multiprocessing.get_context("spawn")  # no inherited threads or connections
        self.inbox: Any = context.Queue()
        self.outbox: Any = context.Queue()
        self._starts: list[Any] = [context.Queue() for _ in range(count)]
        self.processes: list[BaseProcess] = [
            context.Process(
                target=_worker,
                args=(n, os.getpid(), start, self.inbox, self.outbox, tuple(warm)),
                name=f"worker-{n}",
                daemon=True,
            )
            for n, start in enumerate(self._starts)
        ]
        with _ctrl_c_held():
            for process in self.processes:
                process.start()
        self.given = False

    def give(self, settings: Settings, task: WorkerTask) -> None:
        """Their settings and task, pickled here and now: a queue pickles on a thread of its
        own, later, when the task may have changed (working in this process) and an error
        would reach no one."""
        self.given = True
        payload = pickle.dumps((settings, task))
        for start in self._starts:
            start.put(payload)

    def dismiss(self) -> None:
        """Workers not given a task end (after their imports; they are not waited for)."""
        if not self.given:
            self.given = True
            for start in self._starts:
                start.put(None)

    def stop(self) -> None:
        """End the workers; what this process queued for them and they did not take is
        dropped (waiting at exit to hand it to nobody hung a Ctrl-C'ed import)."""
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()
        for queued in (self.inbox, *self._starts):
            queued.cancel_join_thread()


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """SIGINT held back while workers are started: a worker starts with it blocked (Ctrl-C
    is the parent's: a worker ignores it, ``_worker``), so a Ctrl-C in its start-up prints
    no traceback; this process gets its Ctrl-C once they are started."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def default_jobs() -> int:
    """One worker per core, at most ``MAX_JOBS``."""
    return max(1, min(MAX_JOBS, os.cpu_count() or 1))


@dataclass(frozen=True)
class _Failed:
    kind: type[ArchiveError]
    """The error's class (a bug in a worker: ``ArchiveError``)."""
    message: str


_TAKEN = "taken"


def run_in_workers(
    spread: Spread,
    task: WorkerTask,
    batches: Iterable[Any],
    on_message: Send,
    here: Archive | None = None,
) -> None:
    """Run ``task`` over ``batches`` in ``spread.jobs`` processes; ``on_message`` gets
    every message, in this process. ``here``: this process's archive, and this process is
    one of the ``jobs`` (it has loaded everything already: one interpreter fewer to start,
    and it works while the workers start)."""
    count = spread.jobs - (here is not None)
    workers = spread.standby
    if workers is None or workers.given or len(workers.processes) != count:
        if workers is not None:
            workers.dismiss()
        workers = Standby(count)
    try:
        workers.give(spread.settings, task)
        dispatch = _Dispatch(
            iter(batches), workers.processes, workers.inbox, workers.outbox, on_message
        )
        if here is not None:
            with task.session(here):
                dispatch.work_here(task, here)
        dispatch.wait()
    finally:
        workers.stop()


class _Dispatch:
    """Keeps ``AHEAD`` batches per worker in the one queue every process takes from, and
    takes the messages in. One queue, so that no batch waits behind a busy worker while
    another process is idle (at the end of a run, this process takes what is left too)."""

    def __init__(
        self,
        batches: Iterator[Any],
        workers: Sequence[BaseProcess],
        inbox: Any,
        outbox: Any,
        on_message: Send,
    ) -> None:
        self.batches = batches
        self.workers = workers
        self.inbox = inbox
        self.outbox = outbox
        self.on_message = on_message
        self.queued = 0
        """Batches put in the inbox that no process is known to have taken yet."""
        self.ahead = AHEAD * max(1, len(workers))
        self.alive = set(range(len(workers)))
        self.exhausted = False
        self.closed = False
        self._fill()

    def work_here(self, task: WorkerTask, archive: Archive) -> None:
        """Take batches from the inbox in this process too, between the messages."""
        self.ahead += 1  # the one this process is working on
        while True:
            self._take_in(block=False)
            self._fill()
            if not self.queued:
                break  # every batch taken: the iterator is exhausted
            try:
                batch = self.inbox.get(timeout=TAKE_S)
            except queue.Empty:  # a worker took it: its message is on its way ...
                _check_alive(self.outbox, self.workers, self.alive)  # ... unless it died
                continue
            if batch is None:  # every batch taken; the stops are the workers'
                self.inbox.put(None)
                break
            self.queued -= 1
            task.run(archive, batch, self.on_message)
        task.finish(self.on_message)

    def wait(self) -> None:
        """Until every worker has finished."""
        while self.alive:
            self._take_in(block=True)

    def _fill(self) -> None:
        while self.queued < self.ahead and not self.exhausted:
            batch = next(self.batches, None)
            if batch is None:
                self.exhausted = True
                break
            self.inbox.put(batch)
            self.queued += 1
        if self.exhausted and not self.closed:
            for _worker in self.workers:
                self.inbox.put(None)  # no more: finish and stop (after the batches)
            self.closed = True

    def _take_in(self, *, block: bool) -> None:
        """The next message (``block``), or all that have arrived."""
        while self.alive:
            if block:
                n, message = _next_message(self.outbox, self.workers, self.alive)
            else:
                try:
                    n, message = self.outbox.get_nowait()
                except queue.Empty:
                    return
            self._handle(n, message)
            if block:
                return

    def _handle(self, n: int, message: Any) -> None:
        if message == _TAKEN:
            self.queued -= 1
            self._fill()
        elif message is None:
            self.alive.discard(n)
        elif isinstance(message, _Failed):
            _raise(message)
        else:
            self.on_message(message)


def _next_message(outbox: Any, workers: Sequence[BaseProcess], alive: set[int]) -> tuple[int, Any]:
    while True:
        try:
            found: tuple[int, Any] = outbox.get(timeout=POLL_S)
            return found
        except queue.Empty:
            _check_alive(outbox, workers, alive)


def _check_alive(outbox: Any, workers: Sequence[BaseProcess], alive: set[int]) -> None:
    """An ``ArchiveError`` when a worker not known to have finished has ended."""
    for n in alive:
        code = workers[n].exitcode
        if code is not None and not _message_waiting(outbox):
            raise ArchiveError(
                f"a worker process ended unexpectedly (exit code {code}); what was "
                "done stays: run the command again to complete it"
            )


def _message_waiting(outbox: Any) -> bool:
    """Whether a message is still on its way (a worker's last ones are sent by a feeder
    thread, so its exit can be seen before they arrive)."""
    return not outbox.empty()


def _raise(failed: _Failed) -> None:
    """The worker's error again, of its class (and exit code), with its message."""
    error = failed.kind.__new__(failed.kind)
    ArchiveError.__init__(error, failed.message)
    raise error


def _next_batch(inbox: Any, parent: int) -> Any:
    """The parent's next batch (None: no more). A worker whose parent died (killed: it
    could not stop its workers) ends instead of waiting for ever."""
    while True:
        try:
            return inbox.get(timeout=POLL_S)
        except queue.Empty:
            if os.getppid() != parent:
                raise SystemExit(1) from None


def _end_with(parent: int) -> None:
    """End this process as soon as ``parent`` is no longer its parent (it died)."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_S)
    os._exit(1)


def _worker(
    number: int, parent: int, start: Any, inbox: Any, outbox: Any, warm: tuple[str, ...]
) -> None:
    """A worker's whole life: import ``warm``, wait for its settings and task (None: not
    needed), open the store, run the batches it takes, finish."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops us
    threading.Thread(target=_end_with, args=(parent,), name="orphan-check", daemon=True).start()
    from imixs_archive.runtime import open_archive

    for name in warm:
        import_module(name)
    given = _next_batch(start, parent)
    if given is None:
        return
    settings: Settings
    task: WorkerTask
    settings, task = pickle.loads(given)

    def send(message: Any) -> None:
        outbox.put((number, message))

    try:
        with open_archive(settings, create=False) as archive, task.session(archive):
            while (batch := _next_batch(inbox, parent)) is not None:
                send(_TAKEN)
                task.run(archive, batch, send)
            task.finish(send)
    except ArchiveError as exc:
        send(_Failed(type(exc), str(exc)))
    except Exception as exc:  # a bug: one line to the parent, which ends the run
        send(_Failed(ArchiveError, f"{type(exc).__name__}: {exc}"))
    send(None)
