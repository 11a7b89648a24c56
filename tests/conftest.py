"""Fixtures for the whole suite: ``backend`` (each test on each backend), ``archive``, and
``double`` (the workflow test double).

The tests' temporary folders go to memory (a folder of their own under /dev/shm, removed
at the end, or by the next run when this one was killed) when it has room and no
``--basetemp`` is given: the stores commit with ``synchronous=FULL``, and each fsync on a
shared disk costs some 2.5 ms against 0.05 ms in memory, thousands of times a run. No test
depends on the fsync (a killed process's writes live in the page cache either way);
``ARCHIVE_TEST_TMP_ON_DISK=1`` keeps them on disk.

Compiled modules are kept between runs when the environment says not to write them
(``PYTHONDONTWRITEBYTECODE``, as this VM's shells set): in a cache folder of their own, out
of the tree (``sys.pycache_prefix``), for this process and the Python processes the tests
start. Otherwise every run compiles the sources again (some 7 s of CPU to collect) and so
does every ``python -m imixs_archive`` a test starts (some 0.3 s of CPU each).
``ARCHIVE_TEST_NO_BYTECODE=1`` writes none.

The suite runs on two pytest-xdist workers (``addopts`` in pyproject.toml; ``-n 0`` runs it
in this one process): this process makes the run's folder and the workers get one each
inside it (xdist names them ``popen-gw0``, ``popen-gw1``); the compiled modules' cache is
shared (each module is written to a new file, then renamed into place). Each worker is a
test session of its own: its own Cassandra keyspace, its own live servers."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["support.backends", "support.workflow_fixtures", "support.loose_threads"]

MEMORY = Path("/dev/shm")
PREFIX = "imixs-archive-tests-"
MEMORY_ROOM = 8 * 2**30  # a whole run writes some 2 GB; leave the rest to others


def _keep_bytecode_out_of_the_tree() -> None:
    """Before the archive's modules are imported (``pytest_plugins`` below imports them)."""
    if (
        not sys.dont_write_bytecode
        or sys.pycache_prefix
        or os.environ.get("ARCHIVE_TEST_NO_BYTECODE")
    ):
        return
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "imixs-archive-tests" / "pycache"
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # no room or read-only: compile every time, as asked
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)  # the processes the tests start
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


_keep_bytecode_out_of_the_tree()


def _remove_left_behind() -> None:
    """The folders of runs that were killed (their process is gone): memory, not disk."""
    for folder in MEMORY.glob(f"{PREFIX}*-*"):
        pid = folder.name.removeprefix(PREFIX).split("-")[0]
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (ValueError, OSError):
            continue  # not ours, or a process of another user: alive


def _memory_has_room() -> bool:
    try:
        return os.access(MEMORY, os.W_OK) and shutil.disk_usage(MEMORY).free > MEMORY_ROOM
    except OSError:
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if (
        config.option.basetemp
        or os.environ.get("ARCHIVE_TEST_TMP_ON_DISK")
        or not _memory_has_room()
    ):
        return
    _remove_left_behind()
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=MEMORY)
    config.option.basetemp = folder
    config.stash[_IN_MEMORY] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_IN_MEMORY, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


_IN_MEMORY = pytest.StashKey[str]()


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """The logging each test found, put back after it: a command run in-process (``serve``,
    ``sync``) sets up the log for the process (a handler on standard error, levels), and
    left so, a loop of a server the worker still runs (the ledger's rounds every 5 s)
    logged into the captured standard error of whatever test ran next, such as a CLI test
    counting its lines. pytest's own handlers (its capture, per phase) are left to it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    loggers = {
        name: (logger.handlers[:], logger.level, logger.propagate)
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    yield
    for handler in root.handlers[:]:
        if handler not in handlers and not _of_pytest(handler):
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers and not _of_pytest(handler):
            root.addHandler(handler)
    root.setLevel(level)
    for name, (kept, was, propagate) in loggers.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = kept
        logger.setLevel(was)
        logger.propagate = propagate


def _of_pytest(handler: logging.Handler) -> bool:
    return type(handler).__module__.startswith("_pytest")


FIRST_ON_A_WORKER = (
    "tests/storage/test_cluster.py",
    "tests/engine/test_engine.py",
    "tests/test_torture.py",
    "tests/ledger/test_kills.py",
    "tests/archive/test_derived_checks.py",
    "tests/archive/test_gc_runs.py",
    "tests/filestore/test_gc_java.py",
    "tests/recovery/test_restore_kills.py",
    "tests/web/test_browser.py",
    "tests/filestore/test_gc.py",
    "tests/recovery/test_ftps_manifest.py",
    "tests/storage/test_contract.py",
    "tests/cli/test_interrupts.py",
)
"""Files handed out before any other, the longest first (each 30 s to 4 minutes of a
worker's time in `.ci/run` with four workers, bench/README.md "Test suite time"):
``--dist loadfile`` hands out the files with most tests first, which put the cluster's
five tests (nodes stopped and started again) and the torture's two near the end, a tail
with the other workers idle. The longest first leaves the short files to fill the
workers' ends."""


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook (absent with -p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadfile":
        return None  # xdist's own
    from xdist.scheduler import LoadFileScheduling

    class LongFilesFirst(LoadFileScheduling):  # type: ignore[misc]
        def _assign_work_unit(self, node: Any) -> None:
            for scope in reversed(FIRST_ON_A_WORKER):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return LongFilesFirst(config, log)
