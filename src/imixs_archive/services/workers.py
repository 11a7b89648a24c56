"""Work spread over worker processes, each with its own connection to the store.

The archive's work per snapshot (parsing XML, base64, hashing, compressing) is Python
holding the interpreter lock, so threads do not spread it over cores; processes do. The
CLI's ``import`` and ``backup`` hand batches of their items to ``jobs`` workers this way.
Several processes on one store are normal (see ``docs/architecture.md``), so a worker is
one more archive process: it opens the store from the same settings, runs a
:class:`WorkerTask` on each batch it is given, and sends messages back. The parent hands
out at most two batches per worker at a time, so the items may come from a generator of
any length, and takes the messages in on its own thread (the caller's), in the order each
worker sent them.

What fails:
- an error the task lets out (an unreachable store: ``StoreError``) ends the run: the
  parent stops the other workers and raises an error of the same class with its message
  (a bug in a worker: an ``ArchiveError`` naming it);
- a worker that dies (killed, out of memory) ends the run with an ``ArchiveError`` naming
  its exit code. What the workers wrote before stays; every task here is idempotent, so
  the same command run again completes the rest.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError

MAX_JOBS = 4
"""Workers at most, whatever the cores: the store's single writer (SQLite) and the
parent's hand-outs are shared by all."""
AHEAD = 2
"""Batches handed to each worker before it has finished one."""
POLL_S = 0.5
"""How often the parent looks whether a worker it waits for is still alive."""

Send = Callable[[Any], None]


class WorkerTask(Protocol):
    """What a worker runs; picklable (a module-level class), built in the parent."""

    def run(self, archive: Archive, batch: Any, send: Send) -> None:
        """One batch (never None); ``send`` reports back (picklable values)."""

    def finish(self, send: Send) -> None:
        """After the worker's last batch (state held across batches made final)."""


@dataclass(frozen=True)
class Spread:
    """Work in ``jobs`` worker processes, each opening the store from ``settings``."""

    settings: Settings
    jobs: int
    least: int = 1
    """Fewer items than this stay in the calling process: starting a worker costs a new
    interpreter (about 0.2 s of CPU), more than a few small items take."""


def default_jobs() -> int:
    """One worker per core, at most ``MAX_JOBS``."""
    return max(1, min(MAX_JOBS, os.cpu_count() or 1))


@dataclass(frozen=True)
class _Failed:
    kind: type[ArchiveError]
    """The error's class (a bug in a worker: ``ArchiveError``)."""
    message: str


_DONE = "done"


def run_in_workers(
    spread: Spread, task: WorkerTask, batches: Iterable[Any], on_message: Send
) -> None:
    """Run ``task`` over ``batches`` in ``spread.jobs`` worker processes; ``on_message``
    gets every message a worker sent, in the parent."""
    settings, jobs = spread.settings, spread.jobs
    context = multiprocessing.get_context("spawn")  # no inherited threads or connections
    outbox: Any = context.Queue()
    inboxes: list[Any] = [context.Queue() for _ in range(jobs)]
    workers = [
        context.Process(
            target=_worker,
            args=(n, os.getpid(), settings, task, inbox, outbox),
            name=f"worker-{n}",
            daemon=True,
        )
        for n, inbox in enumerate(inboxes)
    ]
    for worker in workers:
        worker.start()
    try:
        _hand_out(iter(batches), workers, inboxes, outbox, on_message)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()


def _hand_out(
    batches: Iterator[Any],
    workers: Sequence[BaseProcess],
    inboxes: list[Any],
    outbox: Any,
    on_message: Send,
) -> None:
    pending = [0] * len(workers)
    finished = [False] * len(workers)
    exhausted = False

    def give(n: int) -> None:
        nonlocal exhausted
        while not exhausted and pending[n] < AHEAD:
            batch = next(batches, None)
            if batch is None:
                exhausted = True
            else:
                inboxes[n].put(batch)
                pending[n] += 1
        if exhausted and pending[n] == 0 and not finished[n]:
            inboxes[n].put(None)  # no more: finish and stop
            finished[n] = True

    for n in range(len(workers)):
        give(n)
    alive = set(range(len(workers)))
    while alive:
        n, message = _next_message(outbox, workers, alive)
        if message == _DONE:
            pending[n] -= 1
            give(n)
        elif message is None:
            alive.discard(n)
        elif isinstance(message, _Failed):
            _raise(message)
        else:
            on_message(message)


def _next_message(outbox: Any, workers: Sequence[BaseProcess], alive: set[int]) -> tuple[int, Any]:
    while True:
        try:
            found: tuple[int, Any] = outbox.get(timeout=POLL_S)
            return found
        except queue.Empty:
            for n in alive:
                code = workers[n].exitcode
                if code is not None and not _drained(outbox):
                    raise ArchiveError(
                        f"a worker process ended unexpectedly (exit code {code}); what was "
                        "done stays: run the command again to complete it"
                    ) from None


def _drained(outbox: Any) -> bool:
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


def _worker(
    number: int, parent: int, settings: Settings, task: WorkerTask, inbox: Any, outbox: Any
) -> None:
    """A worker's whole life: open the store, run the batches it is given, finish."""
    from imixs_archive.storage.factory import open_backend

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops us

    def send(message: Any) -> None:
        outbox.put((number, message))

    try:
        backend = open_backend(settings, create=False)
        try:
            archive = Archive(backend, gc_grace=settings.gc_grace)
            try:
                while (batch := _next_batch(inbox, parent)) is not None:
                    task.run(archive, batch, send)
                    send(_DONE)
                task.finish(send)
            finally:
                archive.close()
        finally:
            backend.close()
    except ArchiveError as exc:
        send(_Failed(type(exc), str(exc)))
    except Exception as exc:  # a bug: one line to the parent, which ends the run
        send(_Failed(ArchiveError, f"{type(exc).__name__}: {exc}"))
    send(None)
