"""``restore --as-of`` on the command line, on SQLite and on the Cassandra node: the dry
run's plan (per instance the snapshot coming back and the items it changes; the
instances that did not exist yet, also in a file), the real run, the time zone of a
point without one, and bad input (one line, its exit code, no request to the workflow)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.cli.restore_plan_commands import progress_line
from imixs_archive.recovery.plan_run import PlanReport
from imixs_archive.storage.base import Backend
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.backends import cassandra_env
from support.restore_data import BAD, NEW_UID, archived_instances, bad_update
from support.workflow_double import WorkflowDouble

POINT = (BAD - dt.timedelta(minutes=5)).isoformat()


@pytest.fixture
def overwritten(
    double: WorkflowDouble,
    archive: Archive,
    backend: Backend,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> dict[str, str]:
    """The bad update of ``restore_data`` (instances 0 and 2 overwritten, one new), the
    settings in the environment; the current folder is ``tmp_path``."""
    newest = archived_instances(double, archive)
    before = bad_update(double, archive, [sorted(newest)[0], sorted(newest)[2]])
    if isinstance(backend, SQLiteBackend):
        monkeypatch.setenv("ARCHIVE_DATA_DIR", str(backend.data_dir))
    else:
        keyspace = request.getfixturevalue("cassandra_session_keyspace")
        for name, value in cassandra_env(keyspace).items():
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", double.url)
    monkeypatch.chdir(tmp_path)
    double.stats.requests = 0
    return before


def test_dry_run_shows_the_plan_and_sends_nothing(
    double: WorkflowDouble,
    overwritten: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    assert main(["restore", "--as-of", POINT, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert double.stats.requests == 0
    for uid, snapshot_id in overwritten.items():
        assert f"back {uid}: {snapshot_id} of " in out
    assert out.count("    subject: 'overwritten' -> 'Ticket A") == 2
    assert out.count("    $taskid: 9000 -> 1002") == 2
    assert f"not yet {NEW_UID}: created 2023-11-19T09:00:30+00:00 (Ticket)" in out
    listed = tmp_path / "not-yet-20231119T085500Z.tsv"
    size = out.splitlines()[-1].split("; ")[1].removesuffix(" of attachments")
    assert size.endswith("KiB")
    assert out.strip().splitlines()[-1] == (
        "2 would go back to 2023-11-19T08:55:00+00:00, 1 did not exist yet (not deleted), "
        f"0 filtered out; {size} of attachments; not yet existing listed in {listed.name}"
    )
    rows = [line.split("\t") for line in listed.read_text().splitlines() if line[0] != "#"]
    assert [row[:3] for row in rows] == [[NEW_UID, "2023-11-19T09:00:30+00:00", "Ticket"]]


def test_the_real_run_restores_and_lists_what_it_cannot_delete(
    double: WorkflowDouble,
    overwritten: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    target = tmp_path / "new.tsv"
    assert main(["restore", "--as-of", POINT, "--not-yet-file", str(target)]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("1 did not exist yet (not deleted), listed in " + str(target)), out
    assert "2 restored, 0 already current" in out
    assert double.stats.posts == 2
    for uid, snapshot_id in overwritten.items():
        assert double.workitems[uid]["$snapshotid"] == [snapshot_id]
    assert NEW_UID in target.read_text()
    assert main(["restore", "--as-of", POINT, "--not-yet-file", str(target)]) == 0
    assert "0 restored, 2 already current" in capsys.readouterr().out
    assert double.stats.posts == 2


def test_a_point_without_offset_is_read_in_archive_timezone(
    double: WorkflowDouble,
    overwritten: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """08:55 UTC is 09:55 in Berlin (November): the same plan; 08:55 read in Berlin is
    07:55 UTC, also before the update; 10:05 in Berlin is after instance 0's update."""
    monkeypatch.setenv("ARCHIVE_TIMEZONE", "Europe/Berlin")
    assert main(["restore", "--as-of", "2023-11-19T09:55", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "2 would go back to 2023-11-19T09:55:00+01:00" in out
    assert main(["restore", "--as-of", "2023-11-19T10:00:45", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 would go back" in out and "0 did not exist yet" in out
    assert main(["restore", "--as-of", "2023-11-19T08:55:00Z", "--dry-run"]) == 0
    assert "2 would go back to 2023-11-19T09:55:00+01:00" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--as-of", "2999-01-01T00:00"], 2, "is in the future"),
        (["--as-of", POINT, "--changed-until", POINT], 2, "is not after the as-of point"),
        (["--as-of", "2023-11-14T08:59:59Z"], 4, "before the archive's first snapshot"),
        (["--as-of", POINT, "--group", "Invoce"], 4, "group Invoce: no snapshot"),
        (["--as-of", "yesterday"], 2, "not a date or date-time"),
        (["--as-of", POINT, "--to", "2023-12-01"], 2, "only apply to a range restore"),
        (["--from", "2023-11-01", "--group", "Ticket"], 2, "only apply to --as-of"),
    ],
)
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_bad_input_is_one_line_and_sends_nothing(
    double: WorkflowDouble,
    overwritten: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str],
    code: int,
    message: str,
    dry_run: list[str],
) -> None:
    assert main(["restore", *args, *dry_run]) == code
    captured = capsys.readouterr()
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1
    assert "Traceback" not in captured.err and not captured.out
    assert double.stats.requests == 0
    assert not list(tmp_path.glob("not-yet-*"))


def test_the_progress_line_says_the_time_left() -> None:
    report = PlanReport(total=10_000, restored=1_000, resumed=500, started=0.0)
    assert progress_line(report, now=10.0) == (
        "restore: 1,500 of 10,000 (15%), 100.0 instances/s, about 1m 25s left"
    )
    assert progress_line(PlanReport(total=3, started=0.0), now=1.0) == (
        "restore: 0 of 3 (0%), 0.0 instances/s"
    )
