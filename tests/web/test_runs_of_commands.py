"""A ``verify`` or ``backup`` run from the command line (as from cron) shows on the Monitor
and in ``/metrics`` of a ``serve`` running beside it and of one started later: the store
records the last run of each, whichever process ran it (issue 46, item 6)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive.verify_fill import corrupt_a_piece
from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import make_snapshot
from web.live import LiveServer, credentials_env, serve_filled
from web.test_metrics import value


def _seed(archive: Archive) -> None:
    for n in range(3):
        origin = f"c0de0000-0000-4000-8000-00000000000{n}"
        archive.store(make_snapshot(n, origin=origin, files={"a.bin": bytes([n]) * 3000}))


def _serve(store: Path) -> Iterator[LiveServer]:
    settings = load_settings(
        {
            "ARCHIVE_DATA_DIR": str(store),
            "ARCHIVE_BACKUP_DIR": str(store.parent / "b"),
            **credentials_env(),
        }
    )
    yield from serve_filled(SQLiteBackend(store), settings, _seed)


def _cell(page: str, key: str) -> str:
    found = re.search(rf'<td data-glance="{key}"[^>]*>(.*?)</td>', page, re.S)
    assert found, key
    return found[1]


def _seen(live: LiveServer) -> tuple[str, str, dict[str, object]]:
    with live.client("manager") as client:
        page = client.get("/ui/monitor").text
        text = client.get("/metrics").text
        jobs = {job["name"]: job for job in client.get("/api/jobs").json()}
    return page, text, jobs


def test_a_verify_and_a_backup_of_the_command_show_beside_and_after(tmp_path: Path) -> None:
    store = tmp_path / "store"
    runs = _serve(store)
    live = next(runs)
    try:
        page, text, _jobs = _seen(live)
        assert _cell(page, "verify") == "none recorded"
        assert value(text, "imixs_archive_verify_problems") == 0
        assert value(text, 'imixs_archive_job_failed{job_name="backup"}') == 0
        # beside the running serve, as cron runs them
        assert main(["verify", "--data-dir", str(store)]) == 0
        assert main(["backup", str(tmp_path / "bk"), "--create", "--data-dir", str(store)]) == 0
        page, text, jobs = _seen(live)
    finally:
        runs.close()
    verify = _cell(page, "verify")
    assert verify.startswith("checked 3 of 3 snapshots, ") and "no problems" in verify, verify
    backup = _cell(page, "backup")
    assert backup.startswith("finished: 3 written, 0 already current, 0 failed, to "), backup
    assert "(by a command on " in backup, backup
    assert value(text, "imixs_archive_verify_problems") == 0
    assert value(text, 'imixs_archive_job_failed{job_name="backup"}') == 0
    assert jobs["verify"]["state"] == "not_run"  # this process ran none ...
    last = jobs["verify"]["last"]  # ... and the store's record says what ran
    assert isinstance(last, dict) and last["ok"] and last["result"]["snapshots"] == 3

    # a backup that fails, then a serve started afterwards
    (tmp_path / "file").write_text("not a folder")
    assert (
        main(["backup", str(tmp_path / "file" / "bk"), "--create", "--data-dir", str(store)]) != 0
    )
    for later in _serve(store):
        page, text, _jobs = _seen(later)
    assert _cell(page, "verify").startswith("checked 3 of 3 snapshots, ")
    assert value(text, 'imixs_archive_job_failed{job_name="backup"}') == 1
    assert _cell(page, "backup").startswith("failed: ")


def test_a_verify_finding_problems_raises_the_gauge_of_every_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    for live in _serve(store):
        corrupt_a_piece(live.archive.backend)
        assert main(["verify", "--data-dir", str(store)]) == 5
        _page, text, _jobs = _seen(live)
        assert value(text, "imixs_archive_verify_problems") >= 1
        assert 'imixs_archive_job_failed{job_name="verify"} 0.0' in text  # found, not failed
    assert "PROBLEM" in capsys.readouterr().out
