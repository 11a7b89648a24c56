"""Every date the service shows or takes is in ARCHIVE_TIMEZONE, named: the listing by day
(API, Inspect page, `list --from/--to`), a snapshot's times, the monitor, the resync start.
Days run from local midnight to local midnight across both clock changes, in Berlin (the
server's zone) and New York (``tz=``)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.ui_actions import _sync_point
from support.snapshots import make_snapshot
from support.workflow_double import WorkflowDouble
from web.live import LiveServer, credentials_env, serve_store
from web.test_workflow import finished

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
MINUTE = dt.timedelta(minutes=1)


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


# (local day, its first instant, the next day's first instant), in UTC by hand
BERLIN_DAYS = [
    (dt.date(2024, 3, 31), utc(2024, 3, 30, 23), utc(2024, 3, 31, 22)),  # 23 hours
    (dt.date(2024, 10, 27), utc(2024, 10, 26, 22), utc(2024, 10, 27, 23)),  # 25 hours
]
NEW_YORK_DAYS = [
    (dt.date(2024, 3, 10), utc(2024, 3, 10, 5), utc(2024, 3, 11, 4)),  # 23 hours
    (dt.date(2024, 11, 3), utc(2024, 11, 3, 4), utc(2024, 11, 4, 5)),  # 25 hours
]


OURS: set[str] = set()
"""Every snapshot these tests put in (the bundled samples are in the store too)."""


def put(archive: Archive, when: dt.datetime) -> str:
    origin = str(uuid.uuid4())
    doc = make_snapshot(0, origin=origin, modified=when)  # $modified written in UTC
    doc["$uniqueid"] = f"{origin}-{int(when.timestamp() * 1000)}"
    sid = archive.store(doc).snapshot_id
    OURS.add(sid)
    return sid


def fill(
    archive: Archive, days: list[tuple[dt.date, dt.datetime, dt.datetime]]
) -> dict[dt.date, list[str]]:
    """Per local day: the snapshots inside it (first and last minute); one just before and
    one at the end go in too, and must not be listed."""
    inside: dict[dt.date, list[str]] = {}
    for day, start, end in days:
        put(archive, start - MINUTE)
        put(archive, end)
        inside[day] = sorted([put(archive, start), put(archive, end - MINUTE)])
    return inside


@pytest.fixture(scope="module")
def berlin_live(
    tmp_path_factory: pytest.TempPathFactory, double: WorkflowDouble
) -> Iterator[tuple[LiveServer, Any]]:
    env = {
        **credentials_env(),
        "ARCHIVE_TIMEZONE": "Europe/Berlin",
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
        "WORKFLOW_SYNC_INITIALDELAY": "0",
    }
    for live in serve_store(tmp_path_factory.mktemp("berlin"), env):
        expected = {**fill(live.archive, BERLIN_DAYS), **fill(live.archive, NEW_YORK_DAYS)}
        yield live, expected


def at(ids: list[str], when: dt.datetime) -> str:
    """The one of ``ids`` archived at ``when`` (its id ends with the epoch millis)."""
    (found,) = [sid for sid in ids if sid.endswith(f"-{int(when.timestamp() * 1000)}")]
    return found


def listed(client: Any, day: dt.date, **params: Any) -> tuple[list[str], dict[str, Any]]:
    answer = client.get(
        "/api/archive/snapshots", params={"from": day.isoformat(), "to": day.isoformat(), **params}
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return sorted(s["snapshot"] for s in body["snapshots"] if s["snapshot"] in OURS), body


def test_api_lists_the_days_of_the_servers_zone(berlin_live: tuple[LiveServer, Any]) -> None:
    live, expected = berlin_live
    with live.client("reader") as client:
        for day, start, _end in BERLIN_DAYS:
            found, body = listed(client, day)
            assert found == expected[day] and body["tz"] == "Europe/Berlin"
            first = next(s for s in body["snapshots"] if s["snapshot"] == at(expected[day], start))
            offset = start.astimezone(BERLIN).utcoffset()
            assert first["modified"] == start.astimezone(BERLIN).isoformat(timespec="milliseconds")
            assert first["modified"].endswith(
                "+01:00" if offset == dt.timedelta(hours=1) else "+02:00"
            )
            assert first["created"] == first["modified"]
        # in UTC (tz=) the same day is another set
        found, body = listed(client, BERLIN_DAYS[1][0], tz="UTC")
        assert body["tz"] == "UTC" and found != expected[BERLIN_DAYS[1][0]]
        bad = client.get(
            "/api/archive/snapshots", params={"from": "2024-01-01", "tz": "Mars/Olympus"}
        )
        assert bad.status_code == 400 and "unknown time zone" in bad.json()["message"]
        backwards = client.get(
            "/api/archive/snapshots", params={"from": "2024-02-02", "to": "2024-02-01"}
        )
        assert backwards.status_code == 400


def test_api_takes_another_zone_and_pages_through_it(berlin_live: tuple[LiveServer, Any]) -> None:
    live, expected = berlin_live
    with live.client("reader") as client:
        for day, start, _end in NEW_YORK_DAYS:
            found, body = listed(client, day, tz="America/New_York")
            assert found == expected[day] and body["tz"] == "America/New_York"
            times = {s["modified"] for s in body["snapshots"]}
            assert start.astimezone(NEW_YORK).isoformat(timespec="milliseconds") in times
        seen: list[str] = []
        params: dict[str, Any] = {
            "from": "2024-11-02",
            "to": "2024-11-04",
            "tz": "America/New_York",
            "limit": 1,
        }
        while True:
            page = client.get("/api/archive/snapshots", params=params).json()
            seen += [s["snapshot"] for s in page["snapshots"]]
            if not page["next"]:
                break
            params["cursor"] = page["next"]
        seen = [sid for sid in seen if sid in OURS]
        assert len(seen) == len(set(seen)) == 4  # before, first, last minute, at the end
        assert set(expected[dt.date(2024, 11, 3)]) <= set(seen)
        instance = expected[dt.date(2024, 11, 3)][0].rsplit("-", 1)[0]
        one = client.get(f"/api/archive/instances/{instance}/snapshots").json()
        assert one["tz"] == "Europe/Berlin" and one["snapshots"][0]["modified"].endswith("+01:00")


def test_pages_show_and_take_the_zone(berlin_live: tuple[LiveServer, Any]) -> None:
    live, expected = berlin_live
    day, start, _end = BERLIN_DAYS[0]
    with live.client("reader") as client:
        page = client.get(
            "/ui/inspect", params={"from": day.isoformat(), "to": day.isoformat()}
        ).text
        assert "days in Europe/Berlin" in page and "Modified (Europe/Berlin)" in page
        shown = {sid for sid in OURS if f"/ui/snapshot/{sid}" in page}
        assert sorted(shown) == expected[day]
        assert start.astimezone(BERLIN).isoformat(timespec="milliseconds") in page  # 00:00+01:00
        snapshot = client.get(f"/ui/snapshot/{at(expected[day], start)}").text
        assert "times in Europe/Berlin" in snapshot
        assert start.astimezone(BERLIN).isoformat(timespec="milliseconds") in snapshot
        monitor = client.get("/ui/monitor").text
        assert (
            "Service up since " in monitor
            and " Europe/Berlin" in monitor.split("Service up since ", 1)[1][:40]
        )
    with live.client("manager", follow_redirects=True) as client:
        assert "days in Europe/Berlin" in client.get("/ui/backup").text
        assert "date and time in Europe/Berlin" in client.get("/ui/resync").text
        started = client.post("/ui/actions/resync", data={"from": "2030-07-01T08:00"})
        assert "resync started" in started.text, started.text
        assert finished(client, "/api/jobs/resync")["state"] == "finished"
        point = client.get("/api/sync/status").json()["sync.point"]
        resync = client.get("/ui/resync").text
    assert point >= int(utc(2030, 7, 1, 6).timestamp() * 1000)  # 08:00 summer time = 06:00Z
    shown = resync.split("<th>Resync point</th><td>", 1)[1].split("<", 1)[0]
    assert shown.startswith("2030-07-01 ") and shown.endswith(" Europe/Berlin")
    started_row = resync.split("<th>Started</th><td>", 1)[1].split("<", 1)[0]
    assert started_row.endswith(" Europe/Berlin")


def test_statistics_count_days_of_the_zone(berlin_live: tuple[LiveServer, Any]) -> None:
    live, _expected = berlin_live
    with live.client("reader") as client:
        board = client.get("/api/stats/dashboard", params={"refresh": "true"}).json()
        page = client.get("/ui/stats").text
    # Berlin's 23-hour day: 22:59Z on the 30th is that day's last minute there, 22:00Z on
    # the 31st is already 1 April (in UTC both would be on the 30th and 31st)
    assert board["tz"] == "Europe/Berlin"
    assert board["per_day"]["2024-03-30"] == 1 and board["per_day"]["2024-04-01"] == 1
    assert board["per_day"]["2024-03-31"] == 2
    assert page.count("days in Europe/Berlin") >= 3  # per day, growth, the range


def test_history_times_in_the_zone(berlin_live: tuple[LiveServer, Any]) -> None:
    live, expected = berlin_live
    day, start, _end = NEW_YORK_DAYS[0]
    instance = at(expected[day], start).rsplit("-", 1)[0]
    with live.client("reader") as client:
        here = client.get(f"/api/analytics/history/{instance}").json()
        there = client.get(f"/api/analytics/history/{instance}", params={"tz": "America/New_York"})
    assert here["tz"] == "Europe/Berlin" and there.json()["tz"] == "America/New_York"
    assert here["steps"][0]["time"] == start.astimezone(BERLIN).isoformat(timespec="milliseconds")
    assert there.json()["steps"][0]["time"] == "2024-03-10T00:00:00.000-05:00"


def test_the_resync_start_is_read_in_the_zone() -> None:
    assert _sync_point("2024-07-01T08:00", BERLIN) == int(utc(2024, 7, 1, 6).timestamp() * 1000)
    assert _sync_point("2024-01-01T08:00", NEW_YORK) == int(utc(2024, 1, 1, 13).timestamp() * 1000)
    assert _sync_point("2024-07-01T08:00+00:00", BERLIN) == int(
        utc(2024, 7, 1, 8).timestamp() * 1000
    )
    assert _sync_point("1700000000000", BERLIN) == 1_700_000_000_000


def test_cli_list_by_day_in_the_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        expected = {**fill(archive, BERLIN_DAYS), **fill(archive, NEW_YORK_DAYS)}
    monkeypatch.setenv("ARCHIVE_TIMEZONE", "Europe/Berlin")
    for day, _start, _end in BERLIN_DAYS:
        assert main(["list", "--from", str(day), "--to", str(day), "--data-dir", str(store)]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split("\t")[1] == "modified (Europe/Berlin)"
        assert (
            sorted(ln.split("\t")[0] for ln in lines[1:] if ln.split("\t")[0] in OURS)
            == expected[day]
        )
    for day, start, _end in NEW_YORK_DAYS:
        args = ["list", "--from", str(day), "--to", str(day), "--tz", "America/New_York", "--json"]
        assert main([*args, "--data-dir", str(store)]) == 0
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert sorted(r["snapshot"] for r in rows if r["snapshot"] in OURS) == expected[day]
        assert start.astimezone(NEW_YORK).isoformat(timespec="milliseconds") in {
            r["modified"] for r in rows
        }
