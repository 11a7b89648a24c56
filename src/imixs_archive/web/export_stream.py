"""A writer thread feeding an HTTP response through a bounded pipe.

``export_table`` writes to a binary stream and returns when the table is complete. Here
it writes into a :class:`Pipe`: bytes are gathered into chunks of ``CHUNK`` and handed
over a queue of at most ``DEPTH`` chunks, so the writer waits while the client reads
slowly and memory stays at ``CHUNK * DEPTH`` whatever the number of rows. When the
client goes away, the next write raises :class:`ClientGone` and the writer ends.

The writers run on a pool the process keeps, of ``WRITERS`` threads: a thread per export
opened a store connection per export (SQLite's are per thread, kept until the store
closes), and ``serve`` ran out of file descriptors. While ``WRITERS`` exports are being
written, another is answered 503 (:class:`ServiceBusyError`) rather than queued.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator
from typing import IO, Any, cast

from imixs_archive.web.problems import ServiceBusyError

CHUNK = 256 * 1024
DEPTH = 8
WRITERS = 8
"""Exports written at once, each on a thread of the process's writer pool."""
_END = object()

_free = threading.BoundedSemaphore(WRITERS)
_work: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
_start_lock = threading.Lock()
_started = False


class ClientGone(Exception):
    """The response was abandoned: the writer stops."""


class Pipe:
    """The write end (a minimal binary file: write, tell, flush) and the read end
    (:meth:`chunks`) of one export."""

    def __init__(self, chunk: int = CHUNK, depth: int = DEPTH) -> None:
        self._chunk = chunk
        self._queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._buffer = bytearray()
        self._written = 0
        self._closed = threading.Event()

    # ---- the writer's side -------------------------------------------------------------

    def write(self, data: Any) -> int:
        piece = bytes(data)
        self._buffer += piece
        self._written += len(piece)
        if len(self._buffer) >= self._chunk:
            self._hand_over(bytes(self._buffer))
            self._buffer.clear()
        return len(piece)

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        """Buffered bytes stay until a chunk is full or the writer finishes."""

    @property
    def closed(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def finish(self, error: BaseException | None = None) -> None:
        """The writer is done: what is buffered goes, then the end (or the error)."""
        try:
            if error is None and self._buffer:
                self._hand_over(bytes(self._buffer))
            self._buffer.clear()
            self._hand_over(error if error is not None else _END)
        except ClientGone:
            pass

    def _hand_over(self, item: object) -> None:
        while not self._closed.is_set():
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue
        raise ClientGone("the client stopped reading")

    # ---- the response's side -----------------------------------------------------------

    def next_chunk(self) -> bytes | None:
        """The next chunk (blocking); None at the end; the writer's error is raised."""
        item = self._queue.get()
        if item is _END:
            return None
        if isinstance(item, BaseException):
            raise item
        return cast(bytes, item)

    def close(self) -> None:
        """The reader is gone: the writer's next hand-over raises ClientGone."""
        self._closed.set()

    def as_file(self) -> IO[bytes]:
        return cast(IO[bytes], self)


def start_writer(write: Callable[[IO[bytes]], object], pipe: Pipe) -> threading.Event:
    """Run ``write(pipe)`` on a writer thread; its end (or error) is passed down the pipe.
    The event is set once the writer has ended. :class:`ServiceBusyError` when
    ``WRITERS`` exports are being written already."""
    if not _free.acquire(blocking=False):
        raise ServiceBusyError(
            f"{WRITERS} exports are being written at the moment: try again when one has ended"
        )
    ended = threading.Event()

    def run() -> None:
        try:
            _write_through(write, pipe)
        finally:
            _free.release()
            ended.set()

    _start_threads()
    _work.put(run)
    return ended


def _write_through(write: Callable[[IO[bytes]], object], pipe: Pipe) -> None:
    try:
        write(pipe.as_file())
    except ClientGone:
        return
    except BaseException as exc:  # handed to the reader, which raises it
        pipe.finish(exc)
        return
    pipe.finish()


def _start_threads() -> None:
    """The writer threads, started once. Daemons (not an executor's threads, which the
    interpreter joins at exit): a writer a stalled client holds does not hold the exit."""
    global _started
    with _start_lock:
        if _started:
            return
        for number in range(WRITERS):
            name = f"export-writer-{number}"
            threading.Thread(target=_serve_work, name=name, daemon=True).start()
        _started = True


def _serve_work() -> None:
    while True:
        _work.get()()


def iter_rest(pipe: Pipe, first: bytes) -> Generator[bytes, None, None]:
    """``first``, then the remaining chunks; closes the pipe however the iteration ends."""
    try:
        yield first
        while (chunk := pipe.next_chunk()) is not None:
            yield chunk
    finally:
        pipe.close()
