"""The processes of a run: CLI commands (each in a process group of its own, so that a
SIGKILL takes its workers with it, as a crash of the machine would) and ``serve``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

CLI = [sys.executable, "-m", "imixs_archive"]
POLL = 0.05
"""Seconds between looks at a running process (the precision of a kill)."""
TESTS = Path(__file__).resolve().parents[2]
"""The ``tests`` folder: on the ``PYTHONPATH`` of helper processes (``support.torture``)."""


@dataclass
class Ran:
    """How one process ended."""

    args: list[str]
    code: int | None
    """Exit code; None when the harness killed it."""
    out: bytes
    err: str
    seconds: float
    timed_out: bool = False

    @property
    def killed(self) -> bool:
        return self.code is None

    def command(self) -> str:
        return " ".join(self.args)

    def tail(self, lines: int = 6) -> str:
        return " | ".join(self.err.strip().splitlines()[-lines:])


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process and every process of its group (its workers)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def run(
    args: list[str],
    env: dict[str, str],
    *,
    kill_after: float | None = None,
    stop_after: float | None = None,
    timeout: float = 300.0,
    python: bool = False,
    until: threading.Event | None = None,
) -> Ran:
    """Run ``imixs-archive ARGS`` (``python``: ``python ARGS``); SIGKILL it (and its
    group) after ``kill_after`` seconds, SIGTERM it after ``stop_after`` or once ``until``
    is set; a process still running after ``timeout`` is killed and marked ``timed_out``."""
    argv = [sys.executable, *args] if python else [*CLI, *args]
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    killed = stopped = timed_out = False
    while True:
        try:
            out, err = process.communicate(timeout=POLL)
            break
        except subprocess.TimeoutExpired:
            pass  # retried: no output is lost
        age = time.monotonic() - started
        if kill_after is not None and age >= kill_after and not killed:
            kill_group(process)
            killed = True
        elif not stopped and (
            (stop_after is not None and age >= stop_after) or (until is not None and until.is_set())
        ):
            process.send_signal(signal.SIGTERM)
            stopped = True
        elif age >= timeout and not timed_out:
            kill_group(process)
            timed_out = True
    code = None if killed or timed_out else process.returncode
    return Ran(
        argv[1:] if python else ["imixs-archive", *args],
        code,
        out,
        err.decode("utf-8", "replace"),
        time.monotonic() - started,
        timed_out,
    )


def _drain(pipe: IO[bytes]) -> None:
    """Read a pipe to its end (so that its writer never blocks), then close it."""
    with pipe:
        pipe.read()


class Serve:
    """``imixs-archive serve`` on a free port; started, killed and started again."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None
        self.generation = 0
        """Counts the starts and kills: a request that spans a change was cut by a kill."""
        self.kills = 0
        self._ready = threading.Event()
        self._lock = threading.Lock()

    def start(self, timeout: float = 120.0) -> None:
        with self._lock:
            self._ready.clear()
            with self.log.open("ab") as log:
                process = subprocess.Popen(
                    [*CLI, "serve", "--port", "0"],
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    start_new_session=True,
                )
            self.process = process
            self.generation += 1
        assert process.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline and process.poll() is None:
            line = process.stdout.readline()
            if line.startswith(b"imixs-archive: serving "):
                break
        if not line.startswith(b"imixs-archive: serving "):
            kill_group(process)
            process.wait()
            process.stdout.close()
            raise RuntimeError(f"serve did not start (exit {process.poll()}): see {self.log}")
        threading.Thread(target=_drain, args=(process.stdout,), daemon=True).start()
        self.url = line.split()[2].decode().rstrip("/")
        self._ready.set()

    def wait_ready(self, timeout: float) -> str | None:
        """The URL once ``serve`` answers (None if it does not within ``timeout``)."""
        if not self._ready.wait(timeout):
            return None
        return self.url

    def kill(self) -> None:
        with self._lock:
            self._ready.clear()
            if self.process is not None:
                self.generation += 1  # before: a request cut by the kill sees it
                self.kills += 1
                kill_group(self.process)
                self.process.wait()
            self.process = None

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM, and the exit code (None: killed after ``timeout``, or not running)."""
        with self._lock:
            self._ready.clear()
            process, self.process = self.process, None
        if process is None:
            return None
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(process)
            process.wait()
            return None
