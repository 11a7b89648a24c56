"""Kill and go on: a job run in a process of its own that SIGKILLs itself at its n-th step,
then the job run again (the command, or the same script) on the same store; and a job
stopped in this process at its n-th step (:func:`stops_at`).

A script given to :func:`run_script` begins after :data:`PRELUDE`: its job calls
``step`` (with any arguments) at each step it makes (an instance, a partition), and the
process kills itself at the step ``kill_at`` names; a job's book is written at every step
(``part_runs.SAVE_MS`` is 0), so the run after the kill goes on from the last step before
it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from imixs_archive.config import Settings
from support.backends import cassandra_env

ROOT = Path(__file__).resolve().parents[2]
KILL_AT = "TEST_KILL_AT"

PRELUDE = f"""
import os, signal, sys
from imixs_archive.archive import part_runs
from imixs_archive.config import load_settings
from imixs_archive.runtime import open_archive
part_runs.SAVE_MS = 0
steps = 0
def step(*_args):
    global steps
    steps += 1
    if steps == int(os.environ.get({KILL_AT!r}, "0")):
        os.kill(os.getpid(), signal.SIGKILL)
"""
"""Begins every script: ``step``, ``load_settings`` and ``open_archive`` at hand."""


def store_env(settings: Settings) -> dict[str, str]:
    """The settings naming ``settings``' store (SQLite's folder, or the Cassandra
    keyspace), for a process that opens it again."""
    if settings.cluster_contactpoints:
        contact = {"ARCHIVE_CLUSTER_CONTACTPOINTS": settings.cluster_contactpoints}
        return cassandra_env(settings.cluster_keyspace, **contact)
    return {"ARCHIVE_DATA_DIR": str(settings.data_dir)}


def process_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The whole environment of such a process: this one's, the package and the test
    support on its path, the store's settings and ``extra``."""
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])
    return {**os.environ, "PYTHONPATH": path, **store_env(settings), **extra}


def run_script(
    script: str, *args: str, env: dict[str, str], kill_at: int = 0
) -> subprocess.CompletedProcess[str]:
    """``script`` (after :data:`PRELUDE`) with ``args``, killed at step ``kill_at``
    (0: never)."""
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + script, *args],
        env={**env, KILL_AT: str(kill_at)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_killed(script: str, *args: str, env: dict[str, str], at: int) -> None:
    """``script`` as :func:`run_script` runs it: it must end killed at step ``at``."""
    done = run_script(script, *args, env=env, kill_at=at)
    assert done.returncode == -signal.SIGKILL, done.stderr


def stops_at(
    *steps: int, error: Callable[[], BaseException] = KeyboardInterrupt
) -> Callable[..., None]:
    """A job's step callback (``progress``, ``seen``, ``on_snapshot``) that stops it as
    Ctrl-C does (or raising ``error()``) at the ``steps`` given, counted over every run it
    is given to (1: the first call); no steps: at every call."""
    calls = 0

    def step(*_args: object) -> None:
        nonlocal calls
        calls += 1
        if not steps or calls in steps:
            raise error()

    return step


def run_command(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m imixs_archive ARGS`` in a process of its own."""
    command = [sys.executable, "-m", "imixs_archive", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def refused_in_one_line(settings: Settings, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The CLI's ``args`` run here on ``settings``' store (named as a process would find
    it): they must be refused as bad settings (exit 2) with a one-line error and no
    traceback, which is returned."""
    from imixs_archive.cli import main

    with pytest.MonkeyPatch.context() as patch:
        for name, value in store_env(settings).items():
            patch.setenv(name, value)
        code = main(list(args))
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err, err
    return err
