"""A whole-workflow restore (``restore --all``) killed with SIGKILL and run again: nothing
is posted twice, nothing is left out, and the run after a kill resumes at the saved
watermark (the instances before it are not asked for again). On SQLite and on the
Cassandra node; the workflow (the double, over loopback) answers each POST after a
delay, as a real one takes its time."""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import Settings
from imixs_archive.document.model import Document
from support.kills import process_env
from support.workflow_double import WorkflowDouble

pytestmark = pytest.mark.both_stores  # store-facing: a restore killed and resumed

INSTANCES = 300
DAY = dt.datetime(2024, 3, 1, 8, 0, tzinfo=dt.UTC)
KILLS = 2


def _archived(double: WorkflowDouble, archive: Archive) -> dict[str, str]:
    """INSTANCES instances of two snapshots each, archived; the workflow then lost them
    all. Returns uid -> newest snapshot."""
    newest: dict[str, str] = {}
    for number in range(INSTANCES):
        uid = f"{number:08x}-5555-4000-8000-000000000000"
        for step in range(2):
            snapshot = double.save(
                Document({"$uniqueid": uid, "subject": f"case {number}", "$taskid": step}),
                modified=DAY + dt.timedelta(hours=step, seconds=number),
                event=False,
            )
            archive.store(snapshot.copy())
            newest[uid] = str(snapshot.get_first("$uniqueid"))
    double.wipe()
    return newest


def _after(archive: Archive) -> str:
    return str(archive.state.load().get_first("restore.plan.after") or "")


def _kill_once_past(archive: Archive, env: dict[str, str], logs: Path, seen: str) -> str:
    """Start ``restore --all`` in a process of its own and SIGKILL it as soon as it saved
    a watermark past ``seen``; returns that watermark."""
    with (logs / "restore.log").open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "imixs_archive", "restore", "--all", "--workers", "4"],
            env=env,
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 120
        while _after(archive) <= seen:
            assert process.poll() is None, (logs / "restore.log").read_text()
            assert time.monotonic() < deadline, "no watermark saved"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    return _after(archive)


def test_a_killed_whole_restore_resumes_without_posting_twice(
    double: WorkflowDouble,
    archive: Archive,
    store_settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    newest = _archived(double, archive)
    env = process_env(store_settings, WORKFLOW_SERVICE_ENDPOINT=double.url)
    env["ARCHIVE_RESTORE_SAVE_EVERY"] = "200ms"
    double.delays = {"POST": 0.03}
    seen = ""
    for _ in range(KILLS):
        seen = _kill_once_past(archive, env, tmp_path, seen)
    posted_before = sum(double.stats.restored.values())
    assert 0 < posted_before < INSTANCES
    assert archive.state.load().get_first("restore.plan.status") == "running"
    double.delays = {}
    for name in ("WORKFLOW_SERVICE_ENDPOINT", "ARCHIVE_DATA_DIR", "ARCHIVE_RESTORE_SAVE_EVERY"):
        if name in env:
            monkeypatch.setenv(name, env[name])
    for name, value in env.items():
        if name.startswith("ARCHIVE_CLUSTER_"):
            monkeypatch.setenv(name, value)
    assert main(["restore", "--all"]) == 0
    out = capsys.readouterr().out
    resumed = int(out.split(" done by the run resumed")[0].rsplit(", ", 1)[1])
    assert resumed == sum(uid <= seen for uid in newest) > 0
    assert double.stats.restored == dict.fromkeys(newest.values(), 1)  # each once, all there
    for uid, snapshot_id in newest.items():
        assert double.workitems[uid]["$snapshotid"] == [snapshot_id]
    assert archive.state.load().get_first("restore.plan.status") == "done"
