"""``Periodic``: the one loop of the work ``serve`` repeats (collector, retention, FTPS
backup of events): its first run, its pace, its errors, its end."""

from __future__ import annotations

import itertools
import threading
import time

from imixs_archive.periodic import Periodic


def test_runs_every_interval_after_the_first_and_stops_when_closed() -> None:
    times: list[float] = []
    loop = Periodic("t", 0.05, lambda: times.append(time.monotonic()))
    started = time.monotonic()
    loop.start()
    time.sleep(0.3)
    loop.close()
    count = len(times)
    time.sleep(0.15)
    assert len(times) == count == loop.runs and 3 <= count <= 7
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
    time.sleep(0.15)
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
