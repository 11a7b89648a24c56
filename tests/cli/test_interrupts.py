"""One Ctrl-C stops a command cleanly: exit 130, the one line ``imixs-archive:
interrupted`` on standard error, no traceback (from the command nor from a worker process
it started), and nothing lost (the next run completes what was begun).

Each test runs the command as a real process in a session of its own and sends SIGINT to
the whole group, as a terminal's Ctrl-C does. A test waits at most ``TIMEOUT`` seconds for
the process to end: a hang fails it (the process group is then killed)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imixs_archive.document.xml_writer import to_xml
from support.snapshots import make_snapshot, numbered_origin

TIMEOUT = 60.0
ONE_LINE = "imixs-archive: interrupted\n"


def _start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "imixs_archive", *args]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
        # at a terminal, Ctrl-C interrupts: not ignored as in a background job of a script
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _ctrl_c(process: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGINT to the process group, once; its output when it ended (a hang fails)."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        return process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        _out, err = process.communicate()
        raise AssertionError(f"one Ctrl-C did not end it in {TIMEOUT} s: {err}") from None


def _snapshot_files(folder: Path, count: int, size: int) -> None:
    folder.mkdir()
    rng = random.Random(46)
    for k in range(1, count + 1):
        doc = make_snapshot(0, origin=numbered_origin(k), files={"a.bin": rng.randbytes(size)})
        (folder / f"{k:05d}.xml").write_bytes(to_xml(doc))


def _assert_clean(process: subprocess.Popen[str], err: str) -> None:
    assert "Traceback" not in err, err
    assert (process.returncode, err) == (130, ONE_LINE)


def _children(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return []


@pytest.mark.parametrize("after", [0.0, 0.05, 0.1, 0.2])
def test_ctrl_c_in_the_start_up_is_one_line(tmp_path: Path, after: float) -> None:
    """An import of 32 MiB or more starts its worker processes first, while the command
    loads (``standby_workers``): a Ctrl-C then printed tracebacks, of the command and of
    each worker. The Ctrl-C comes ``after`` seconds after the first worker was started
    (before, it is the interpreter's own start, which prints its own traceback)."""
    _snapshot_files(tmp_path / "in", 5, 9 * 1024 * 1024)
    process = _start(["import", str(tmp_path / "in"), "--data-dir", str(tmp_path / "store")])
    deadline = time.monotonic() + TIMEOUT
    while not _children(process.pid) and process.poll() is None:
        assert time.monotonic() < deadline, "no worker process started"
        time.sleep(0.002)
    time.sleep(after)
    if process.poll() is not None:
        pytest.skip(f"the import ended before {after} s")
    _out, err = _ctrl_c(process)
    _assert_clean(process, err)


@pytest.mark.slow
def test_ctrl_c_in_an_import_with_workers_stops_it_and_the_next_completes(
    tmp_path: Path,
) -> None:
    """6,000 small files: batches of some 1,850 files queued for the worker. The parent
    waited at its exit to hand the queued batches to a worker it had stopped: it hung until
    a second Ctrl-C, then printed a traceback."""
    _snapshot_files(tmp_path / "in", 6000, 5500)
    store = tmp_path / "store"
    args = ["import", str(tmp_path / "in"), "--jobs", "2", "--data-dir", str(store)]
    process = _start(args)
    deadline = time.monotonic() + TIMEOUT
    while not (store / "archive.db").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the parent and the worker import
    if process.poll() is not None:
        pytest.skip("the import ended before the Ctrl-C")
    _out, err = _ctrl_c(process)
    _assert_clean(process, err)
    again = subprocess.run(
        [sys.executable, "-m", "imixs_archive", *args], capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    new, present = (int(again.stdout.split()[i]) for i in (0, 2))
    assert new + present == 6000 and present > 0, again.stdout


def test_ctrl_c_in_a_restore_waiting_for_the_workflow_stops_it(tmp_path: Path) -> None:
    """A restore waits for a workflow that cannot be reached; the first Ctrl-C was not
    seen (the restore's threads went on waiting)."""
    _snapshot_files(tmp_path / "in", 3, 100)
    store = str(tmp_path / "store")
    imported = subprocess.run(
        [
            sys.executable,
            "-m",
            "imixs_archive",
            "import",
            str(tmp_path / "in"),
            "--data-dir",
            store,
        ],
        capture_output=True,
        text=True,
    )
    assert imported.returncode == 0, imported.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"WORKFLOW_SERVICE_ENDPOINT": f"http://127.0.0.1:{port}/api"}
    process = _start(["restore", "--from", "2023-01-01", "--data-dir", store], env)
    time.sleep(3.0)  # started, and waiting for the workflow
    assert process.poll() is None
    _out, err = _ctrl_c(process)
    _assert_clean(process, err)
