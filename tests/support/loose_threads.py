"""Background loops a test leaves running fail that test (a teardown error naming them).

A loop left over (a ``Periodic``: the ledger's schedule, the collector, the scrub ...; the
sync's threads) goes on working and logging into whatever test the worker runs next: one
logged into the captured standard error of a CLI test that counts its lines, a failure
far from its cause, and only when its round came at that moment. Checked twice:

- a loop started while a test ran (its call, not its fixtures) must be gone once the
  test's fixtures are torn down;
- a loop started anywhere in a file (module-scoped fixtures too) must be gone once the
  file's last test is torn down.

Loops of session-scoped fixtures (the web tests' live servers, made once per worker) are
meant to run all along and are not counted; what they log reaches no test's output once
each test's logging is put back (``restore_logging`` in ``tests/conftest.py``).

A loop that is still stopping gets ``WAIT_S`` to end. One left over is told to stop
(never joined), so that it does not go on into the next test."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from imixs_archive.periodic import Periodic

LOOP_NAMES = frozenset({"sync-loop", "sync-catchup"})
"""Threads of the sync service (not ``Periodic`` ones) that run rounds and log."""
WAIT_S = 10.0

_IN_CALL = pytest.StashKey[set[threading.Thread]]()
_module_start: dict[str, set[threading.Thread]] = {}
_of_the_session: set[threading.Thread] = set()


def _owner(thread: threading.Thread) -> Any:
    return getattr(getattr(thread, "_target", None), "__self__", None)


def _loops() -> set[threading.Thread]:
    return {
        thread
        for thread in threading.enumerate()
        if thread.is_alive()
        and thread not in _of_the_session
        and (isinstance(_owner(thread), Periodic) or thread.name in LOOP_NAMES)
    }


def _still_running(threads: set[threading.Thread]) -> list[threading.Thread]:
    deadline = time.monotonic() + WAIT_S
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [thread for thread in threads if thread.is_alive()]
    for thread in left:
        owner = _owner(thread)
        if isinstance(owner, Periodic):
            owner.stop.set()
        elif callable(getattr(owner, "stop", None)):
            owner.stop()
    return left


def _say(left: list[threading.Thread], where: str) -> str:
    names = ", ".join(sorted(f"{t.name!r} ({type(_owner(t)).__name__})" for t in left))
    return f"background loops left running {where}: {names}"


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: Any) -> Any:
    if fixturedef.scope != "session":
        return (yield)
    before = _loops()
    try:
        return (yield)
    finally:
        _of_the_session.update(_loops() - before)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    module = item.nodeid.split("::", 1)[0]
    if module not in _module_start:
        _module_start.clear()
        _module_start[module] = _loops()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    before = _loops()
    try:
        return (yield)
    finally:
        item.stash[_IN_CALL] = _loops() - before


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    result = yield
    module = item.nodeid.split("::", 1)[0]
    left = _still_running(item.stash.get(_IN_CALL, set()))
    if left:
        raise AssertionError(_say(left, "by the test"))
    if nextitem is None or nextitem.nodeid.split("::", 1)[0] != module:
        started = _loops() - _module_start.pop(module, set())
        left = _still_running(started)
        if left:
            raise AssertionError(_say(left, f"by the tests of {module} (a fixture?)"))
    return result
