"""The Monitor answers "is my archive complete and current?" at a glance, the Statistics
page's time axes show days without snapshots, and neither page shows raw keys or values
(issue 32)."""

from __future__ import annotations

import datetime as dt
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.document.model import Long
from imixs_archive.humanize import human_age
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.ui_stats import time_axis
from support.snapshots import make_snapshot
from support.workflow_double import WorkflowDouble
from web.live import LiveServer, credentials_env, serve_filled

NOW = dt.datetime.now(dt.UTC)
DAYS_AGO = (40, 39, 21, 0)
"""Snapshots on these days before today: none on the 17 days from 38 to 22 days ago."""


def _put(archive: Archive, when: dt.datetime) -> str:
    origin = str(uuid.uuid4())
    doc = make_snapshot(0, origin=origin, modified=when, files={"a.txt": b"x" * 5000})
    doc["$uniqueid"] = f"{origin}-{int(when.timestamp() * 1000)}"
    return archive.store(doc).snapshot_id


def _serve(store: Path, env: dict[str, str], seed: bool) -> Iterator[LiveServer]:
    backend = SQLiteBackend(store)
    settings = load_settings(
        {"ARCHIVE_DATA_DIR": str(store), "ARCHIVE_BACKUP_DIR": str(store.parent / "b"), **env}
    )

    def fill(archive: Archive) -> None:
        for days in DAYS_AGO if seed else ():
            _put(archive, NOW - dt.timedelta(days=days, seconds=2))

    yield from serve_filled(backend, settings, fill)


@pytest.fixture(scope="module")
def gap_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from _serve(tmp_path_factory.mktemp("gap") / "store", credentials_env(), seed=True)


def _cell(page: str, key: str) -> str:
    found = re.search(rf'<td data-glance="{key}"[^>]*>(.*?)</td>', page, re.S)
    assert found, key
    return found[1]


def _day(days_ago: int) -> str:
    return (NOW - dt.timedelta(days=days_ago, seconds=2)).date().isoformat()


def test_a_stop_of_the_archiving_shows_on_the_statistics_time_axes(gap_live: LiveServer) -> None:
    with gap_live.client("reader") as client:
        page = client.get("/ui/stats", params={"refresh": "true"}).text
    overview = page.split('id="overview"', 1)[1].split('id="range"', 1)[0]
    per_day = overview.split("Storage growth", 1)[0]
    bars = dict(re.findall(r"<title>(\d{4}-\d\d-\d\d): ([\d,]+)</title>", per_day))
    first = dt.date.fromisoformat(_day(40))
    every_day = [(first + dt.timedelta(n)).isoformat() for n in range(41)]
    # every day from the first with snapshots up to today, each once (both widths)
    assert sorted(bars) == every_day, sorted(bars)
    assert [bars[_day(n)] for n in range(38, 21, -1)] == ["0"] * 17  # the stop, drawn
    assert bars[_day(21)] == "1" and bars[_day(0)] == "1" and bars[_day(10)] == "0"
    growth = overview.split("Storage growth", 1)[1]
    logical = dict(re.findall(r"<title>logical (\d{4}-\d\d-\d\d): ([^<]+)</title>", growth))
    assert sorted(logical) == every_day
    # carried forward through the days without snapshots
    assert {logical[_day(n)] for n in range(39, 21, -1)} == {"9.8 KiB"}
    assert logical[_day(21)] == logical[_day(1)] == "14.6 KiB" and logical[_day(0)] == "19.5 KiB"


def test_a_time_axis_longer_than_a_year_is_drawn_per_month() -> None:
    data = {
        "per_day": {"2024-04-02": 3, "2024-04-20": 1, "2024-05-01": 2},
        "growth": [
            {"day": "2024-04-02", "snapshots": 3, "logical_bytes": 30, "file_bytes": 3},
            {"day": "2024-04-20", "snapshots": 4, "logical_bytes": 40, "file_bytes": 4},
            {"day": "2024-05-01", "snapshots": 6, "logical_bytes": 60, "file_bytes": 6},
        ],
    }
    unit, periods, growth = time_axis(data, dt.date(2025, 6, 3))
    assert unit == "month" and len(periods) == len(growth) == 15
    assert periods[:3] == [("2024-04", 4), ("2024-05", 2), ("2024-06", 0)]
    assert periods[-1] == ("2025-06", 0)
    assert [g["logical_bytes"] for g in growth[:3]] == [40, 60, 60] and growth[-1][
        "day"
    ] == "2025-06"
    unit, periods, growth = time_axis(data, dt.date(2024, 5, 3))
    assert unit == "day" and len(periods) == 32 and periods[-1] == ("2024-05-03", 0)


def test_the_monitor_says_at_a_glance_whether_the_archive_is_complete_and_current(
    gap_live: LiveServer,
) -> None:
    archive = gap_live.archive
    newest = max(archive.index.iter_snapshot_ids(), key=lambda sid: int(sid.rsplit("-", 1)[1]))
    with gap_live.client("manager") as client:
        held = newest.rsplit("-", 1)[0]
        archive.holds.place(held, "audit", "mia", NOW)
        archive.holds.place(held, "case 4711", "tom", NOW)  # two cases, one instance
        assert client.post("/api/verify").status_code == 202
        deadline = time.monotonic() + 60
        while client.get("/api/verify").json()["state"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        page = client.get("/ui/monitor").text
    assert _cell(page, "snapshots") == "4 in all, 1 today"
    assert _cell(page, "newest").endswith(f" · {newest}")
    assert re.search(r"\((\d+ s|\d+ min) ago\)", _cell(page, "newest")), _cell(page, "newest")
    assert _cell(page, "lag").startswith("not known: sync is not configured")
    assert _cell(page, "round") == "none recorded"
    assert _cell(page, "backup") == "none recorded"
    verify = _cell(page, "verify")
    assert verify.startswith("checked 4 of 4 snapshots, ") and "no problems" in verify, verify
    assert re.fullmatch(
        r"[\d.]+ (B|KiB|MiB) data, [\d.]+ (B|KiB|MiB) write-ahead log", _cell(page, "size")
    )
    assert _cell(page, "holds") == "1 process instance held (2 cases)"
    # SQLite internals in a details section, labelled for people, sizes in units
    details = page.split("<summary>Store details</summary>", 1)[1].split("</details>", 1)[0]
    rows = dict(re.findall(r"<tr><th>([^<]+)</th><td>([^<]*)</td></tr>", details))
    assert rows["Kind of store"] == "SQLite (embedded)"
    assert re.fullmatch(r"[\d.]+ KiB", rows["Page size"]), rows
    assert rows["Journal mode"] == "WAL" and "Size bytes" not in rows
    sizes = [value for label, value in rows.items() if label != "Database file"]
    assert not re.search(r"\d{5,}", " ".join(sizes)), rows  # no raw byte counts
    glance = page.split('id="glance"', 1)[1].split("</section>", 1)[0]
    assert "Page size" not in glance and "Size bytes" not in page


def test_times_on_the_monitor_are_humanized(gap_live: LiveServer) -> None:
    two_years = int((NOW - dt.timedelta(days=800)).timestamp() * 1000)
    state = gap_live.archive.state.load()
    state["sync.point"] = Long(two_years)
    gap_live.archive.state.save(state)
    with gap_live.client("reader") as client:
        page = client.get("/ui/monitor").text
    point = page.split("<td data-resync-point>", 1)[1].split("</td>", 1)[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(2 years ago\)", point), point
    assert not re.search(r"\d{6,} s ago|\.\d{6}", page.split('id="ledger"', 1)[0])


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (42, "42 s ago"),
        (300, "5 min ago"),
        (3 * 3600, "3 h ago"),
        (12 * 86_400, "12 days ago"),
        (100 * 86_400, "3 months ago"),
        (82_987_465, "2 years ago"),
        (-300, "in 5 min"),
    ],
)
def test_human_age(seconds: float, text: str) -> None:
    assert human_age(seconds) == text


@pytest.fixture
def double() -> Iterator[WorkflowDouble]:
    with WorkflowDouble() as running:
        yield running


def test_a_finished_one_shot_sync_round_shows_finished_on_the_monitor(
    double: WorkflowDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    env = {
        "ARCHIVE_DATA_DIR": str(store),
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
        "WORKFLOW_SYNC_INITIALDELAY": "0",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for n in range(3):
        double.save(subject=f"#{n}")
    assert main(["sync", "--once"]) == 0
    for name in env:
        monkeypatch.delenv(name)
    server = _serve(store, credentials_env(), seed=False)
    live = next(server)
    try:
        with live.client("reader") as client:
            page = client.get("/ui/monitor").text
    finally:
        server.close()
    last = _cell(page, "round")
    assert last.startswith(
        "finished one round: 3 events read (3 done), 0 left in the event log · "
    ), last
    assert re.search(r" \(\d+ s ago\) · process ", last), last
    process = page.split("<td data-process>", 1)[1].split("</td>", 1)[0]
    assert process.startswith("finished one round: ") and "starting" not in process
