"""Backup ranges are days of the time zone given (ARCHIVE_TIMEZONE in the CLI, API and UI):
the 25-hour autumn day in Berlin and the 23-hour spring day in New York, on every backend."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.recovery.backup import DayRange, backup
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.ftps_server import FtpsServer
from support.snapshots import make_snapshot

MINUTE = dt.timedelta(minutes=1)


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


CASES = [  # zone, local day, its first instant, the next day's first instant (UTC)
    ("Europe/Berlin", dt.date(2024, 10, 27), utc(2024, 10, 26, 22), utc(2024, 10, 27, 23)),
    ("America/New_York", dt.date(2024, 3, 10), utc(2024, 3, 10, 5), utc(2024, 3, 11, 4)),
]


def put(archive: Archive, when: dt.datetime) -> str:
    origin = str(uuid.uuid4())
    doc = make_snapshot(0, origin=origin, modified=when)
    doc["$uniqueid"] = f"{origin}-{int(when.timestamp() * 1000)}"
    archive.store(doc)
    return origin


def around_the_day(archive: Archive, start: dt.datetime, end: dt.datetime) -> set[str]:
    """Snapshots of four instances, a minute inside and outside each end of the day: the
    instances of the two inside."""
    put(archive, start - MINUTE)
    put(archive, end)
    return {put(archive, start), put(archive, end - MINUTE)}


def written(root: Path) -> set[str]:
    return {path.stem for path in root.rglob("*.xml")}


@pytest.mark.parametrize(("zone", "day", "start", "end"), CASES, ids=lambda v: str(v))
def test_backup_of_a_local_day(
    archive: Archive, tmp_path: Path, zone: str, day: dt.date, start: dt.datetime, end: dt.datetime
) -> None:
    inside = around_the_day(archive, start, end)
    summary = backup(archive, tmp_path / "b", days=DayRange(day, day, ZoneInfo(zone)))
    assert summary.written == 2 and written(tmp_path / "b") == inside


def test_cli_backup_reads_days_in_archive_timezone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    zone, day, start, end = CASES[0]
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        inside = around_the_day(archive, start, end)
    monkeypatch.setenv("ARCHIVE_TIMEZONE", zone)
    target = tmp_path / "tree"
    args = [
        "backup",
        str(target),
        "--create",
        "--from",
        str(day),
        "--to",
        str(day),
        "--data-dir",
        str(store),
    ]
    assert main(args) == 0
    assert "2 written" in capsys.readouterr().out and written(target) == inside


def test_cli_ftps_backup_reads_days_in_archive_timezone(
    tmp_path: Path,
    ftps: FtpsServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``backup ftps://...`` too: its days go to the FTPS target in ARCHIVE_TIMEZONE."""
    zone, day, start, end = CASES[0]
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        inside = around_the_day(archive, start, end)
    for name, value in {**ftps.env(), "ARCHIVE_TIMEZONE": zone}.items():
        monkeypatch.setenv(name, value)
    days = ["--from", str(day), "--to", str(day)]
    assert main(["backup", ftps.url(), *days, "--data-dir", str(store)]) == 0
    assert "2 written" in capsys.readouterr().out and written(ftps.root / "backup") == inside
