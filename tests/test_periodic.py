"""``Periodic``: the one loop of the work ``serve`` repeats (collector, retention, FTPS
backup of events): its first run, its pace, its errors, its end."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

import pytest

from imixs_archive.errors import StoreError
from imixs_archive.periodic import Periodic, Schedule


def _until(check: Callable[[], bool]) -> None:
    """Poll ``check`` until it holds: a loop is only as punctual as the machine lets it be
    (a fixed sleep then a count asked for a pace a loaded machine does not give)."""
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, "not within a minute"
        time.sleep(0.01)


def test_runs_every_interval_after_the_first_and_stops_when_closed() -> None:
    times: list[float] = []
    loop = Periodic("t", 0.05, lambda: times.append(time.monotonic()))
    started = time.monotonic()
    loop.start()
    _until(lambda: len(times) >= 3)
    loop.close()
    closed = time.monotonic()
    count = len(times)
    time.sleep(0.15)
    assert len(times) == count == loop.runs  # none after the close
    assert count <= (closed - started) / 0.045  # never faster than the interval
    assert times[0] - started >= 0.05  # one interval first
    assert all(b - a >= 0.045 for a, b in itertools.pairwise(times))


def test_a_failing_run_is_reported_and_the_next_one_runs() -> None:
    errors: list[Exception] = []
    calls = iter(range(100))

    def work() -> None:
        if next(calls) == 0:
            raise RuntimeError("first fails")

    loop = Periodic("t", 0.02, work, on_error=errors.append, at_once=True)
    loop.start()
    _until(lambda: loop.runs >= 3)
    loop.close()
    assert [str(e) for e in errors] == ["first fails"] and loop.runs >= 3


def test_run_in_the_calling_thread_until_its_stop_is_set() -> None:
    stop = threading.Event()
    seen: list[int] = []

    def work() -> None:
        seen.append(1)
        if len(seen) == 3:
            stop.set()

    Periodic("t", 0.01, work, at_once=True, stop=stop).run()
    assert seen == [1, 1, 1]


class _Flaky(Schedule):
    name = "flaky"
    at_once = True
    failing = "flaky work failed"

    def __init__(self, errors: list[Exception]) -> None:
        super().__init__(0.01)
        self.errors = errors
        self.seen: list[str] = []

    def run_once(self) -> None:
        self.seen.append(self.last_error)
        if self.errors:
            raise self.errors.pop(0)
        self.last_error = ""


def test_a_schedule_the_store_fails_warns_and_a_fault_is_logged_with_its_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    flaky = _Flaky([StoreError("the store went away"), KeyError("a defect")])
    with caplog.at_level(logging.WARNING):
        flaky.start()
        _until(lambda: flaky.runs >= 3)
        flaky.close()
    assert flaky.seen[:3] == ["", "the store went away", "KeyError: 'a defect'"]
    assert flaky.last_error == ""
    store, fault = (r for r in caplog.records if r.name in (__name__, "imixs_archive.periodic"))
    assert (store.name, store.levelname, store.exc_info) == (__name__, "WARNING", None)
    assert store.getMessage() == "flaky work failed: the store went away"
    assert (fault.levelname, fault.getMessage()) == ("ERROR", "flaky: a run failed")
    assert fault.exc_info is not None
