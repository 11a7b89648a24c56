"""Work that ``serve`` runs again and again on a thread of its own (the collector, retention,
the FTPS backup of events): one way to start it, pace it and stop it. Intervals are seconds
here; settings given in milliseconds are converted where they are read."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from imixs_archive.errors import ArchiveError

log = logging.getLogger(__name__)


class Periodic:
    """``work`` every ``every`` seconds on a daemon thread: the first run ``every`` seconds
    after :meth:`start` (``at_once``: right away), then one ``every`` after the end of the
    previous, until :meth:`close`. An exception of a run goes to ``on_error`` and the next
    run tries again: the process stays up. ``stop`` is set when it is closing: long work
    looks at it to end early."""

    def __init__(
        self,
        name: str,
        every: float,
        work: Callable[[], None],
        *,
        on_error: Callable[[Exception], None] | None = None,
        at_once: bool = False,
        stop: threading.Event | None = None,
    ) -> None:
        self.name = name
        self.every = every
        self.runs: int = 0
        self.stop = stop or threading.Event()
        self._work = work
        self._on_error = on_error
        self._at_once = at_once
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
            self._thread.start()

    def run(self) -> None:
        """The loop, in the calling thread (until ``stop`` is set)."""
        self._loop()

    def _loop(self) -> None:
        if not self._at_once and self.stop.wait(self.every):
            return
        while True:
            try:
                self._work()
            except Exception as exc:
                if self._on_error is None:
                    raise
                self._on_error(exc)
            self.runs += 1
            if self.stop.wait(self.every):
                return

    def close(self, timeout: float = 30.0) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


R = TypeVar("R")


class Schedule(Generic[R]):
    """Work ``serve`` repeats on a thread of its own. A subclass names it, gives its
    ``interval`` in seconds (0 or less: never started) and :meth:`work`; starting,
    pacing, stopping, the last run's report (``last``) and what a failed run leaves
    (``last_error``, logged; the next run tries again) are the same for all."""

    name = "schedule"
    at_once = False
    """The first run right at the start, not one interval after it."""
    failing = "a run failed"
    """What the warning of a run the store failed says first."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.last: R | None = None
        self.last_error = ""
        self._loop = Periodic(
            self.name, interval, self._turn, at_once=self.at_once, on_error=self.failed
        )

    @property
    def stop(self) -> threading.Event:
        """Set when it is closing: a long run looks at it to end early."""
        return self._loop.stop

    @property
    def runs(self) -> int:
        return self._loop.runs

    def start(self) -> None:
        if self.interval > 0:
            self._loop.start()

    def run_once(self) -> R:
        """One run now (each turn of the loop, or a caller's): its report is ``last``, and
        a failed run's error is over."""
        report = self.work()
        self.last, self.last_error = report, ""
        return report

    def work(self) -> R:
        raise NotImplementedError

    def _turn(self) -> None:
        self.run_once()

    def failed(self, exc: Exception) -> None:
        """A run that raised: the store's own error (it went away) is logged as a warning,
        by the subclass's module; anything else is a fault of the code, logged with its
        trace."""
        if isinstance(exc, ArchiveError):
            self.last_error = str(exc)
            logging.getLogger(type(self).__module__).warning("%s: %s", self.failing, exc)
            return
        self.last_error = f"{type(exc).__name__}: {exc}"
        log.error("%s: a run failed", self.name, exc_info=exc)

    def close(self, timeout: float = 30.0) -> None:
        self._loop.close(timeout)


class Background(Protocol):
    def start(self) -> None: ...

    def close(self) -> None: ...


class Lifecycle:
    """What ``serve`` runs beside its requests, started in the order given and closed the
    other way round; a close that fails is logged and the others still close."""

    def __init__(self, parts: Sequence[Background]) -> None:
        self._parts = list(parts)
        self._started: list[Background] = []

    def start(self) -> None:
        for part in self._parts:
            part.start()
            self._started.append(part)

    def close(self) -> None:
        while self._started:
            part = self._started.pop()
            try:
                part.close()
            except Exception:
                log.exception("closing %s failed", type(part).__name__)
