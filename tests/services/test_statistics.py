"""Per-day figures are counted once (``analytics.aggregates.whole_archive``): ``stats
--json``, ``/api/stats``, the Statistics page's figures and ``/api/analytics/aggregates``
agree, on a store whose files share pieces across days."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.stats import collect_stats
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.services.statistics import archive_stats
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
from imixs_archive.web.dashboard import compute_dashboard
from support.snapshots import ORIGIN, make_snapshot
from web.live import PASSWORDS, credentials_env

OTHER = "11111111-2222-4333-8444-555555555555"
BASE = random.Random(7).randbytes(600_000)
GROWN = BASE + random.Random(8).randbytes(200_000)  # shares BASE's pieces but its last
EDITED = random.Random(9).randbytes(100_000) + BASE[100_000:]  # shares most of BASE's


def _at(day: int, hour: int) -> dt.datetime:
    return dt.datetime(2023, 3, day, hour, tzinfo=dt.UTC)


def _snapshot(when: dt.datetime, files: dict[str, bytes], origin: str = ORIGIN) -> Any:
    """A snapshot whose id carries its time, as the workflow's ids do."""
    sid = f"{origin}-{int(when.timestamp() * 1000)}"
    return make_snapshot(0, origin=origin, modified=when, files=files, dollar_uniqueid=sid)


def _fill(archive: Archive) -> None:
    """Three days: a file first seen on day 1 is carried on day 2 (not new there), a file
    sharing its pieces arrives on day 2, another on day 3 in a second instance, and day 3
    also carries the first file again in that instance (not new)."""
    archive.store(_snapshot(_at(1, 9), {"a.pdf": BASE}))
    archive.store(_snapshot(_at(2, 9), {"a.pdf": BASE, "b.pdf": GROWN}))
    archive.store(_snapshot(_at(3, 23), {"c.pdf": EDITED, "d": BASE}, OTHER))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with SQLiteBackend(path) as backend, Archive(backend) as archive:
        _fill(archive)
    return path


async def _ask_the_api(app: Any) -> tuple[Any, Any, Any]:
    """In process (ASGI): /api/stats, the Statistics page's figures, the aggregates."""
    transport = httpx.ASGITransport(app=app)
    auth = ("rex", PASSWORDS["rex"])
    async with httpx.AsyncClient(transport=transport, base_url="http://x", auth=auth) as client:
        api_stats = (await client.get("/api/stats")).json()
        board = (await client.get("/api/stats/dashboard", params={"refresh": "true"})).json()
        params = {"from": "2023-03-01", "to": "2023-03-03"}
        rows = (await client.get("/api/analytics/aggregates", params=params)).json()["rows"]
    return api_stats, board, rows


def test_dashboard_stats_and_analytics_count_each_day_alike(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--json", "--data-dir", str(store)]) == 0
    cli = json.loads(capsys.readouterr().out)
    settings = load_settings({"ARCHIVE_DATA_DIR": str(store), **credentials_env()})
    with SQLiteBackend(store) as backend:
        app = create_app(settings, backend, run_sync=False)
        api_stats, board, rows = asyncio.run(_ask_the_api(app))
        totals = collect_stats(backend)
    per_day = {row["period"]: row for row in rows}
    snapshots = {day: row["snapshots"] for day, row in per_day.items() if row["snapshots"]}
    new_bytes = {day: row["new_bytes"] for day, row in per_day.items() if row["new_bytes"]}
    assert snapshots == {"2023-03-01": 1, "2023-03-02": 1, "2023-03-03": 1}
    assert new_bytes == {
        "2023-03-01": len(BASE),
        "2023-03-02": len(GROWN),
        "2023-03-03": len(EDITED),
    }
    assert cli["by_day"] == api_stats["by_day"] == board["per_day"] == snapshots
    assert board["new_bytes_per_day"] == new_bytes
    # the distinct files' bytes once, whichever way summed; pieces are fewer (shared)
    assert sum(new_bytes.values()) == totals.file_bytes == board["growth"][-1]["file_bytes"]
    assert totals.stored_bytes < totals.file_bytes
    logical = {day: row["logical_bytes"] for day, row in per_day.items() if row["snapshots"]}
    assert logical == {
        "2023-03-01": len(BASE),
        "2023-03-02": len(BASE) + len(GROWN),
        "2023-03-03": len(EDITED) + len(BASE),
    }
    assert board["growth"][-1]["logical_bytes"] == totals.logical_bytes == sum(logical.values())


def test_days_of_the_zone_alike(archive: Archive) -> None:
    _fill(archive)
    tokyo = archive_stats(archive, "Asia/Tokyo")  # 23:00Z on the 3rd is the 4th there
    assert tokyo["tz"] == "Asia/Tokyo"
    assert tokyo["by_day"] == {"2023-03-01": 1, "2023-03-02": 1, "2023-03-04": 1}
    board = compute_dashboard(archive, ZoneInfo("Asia/Tokyo"))
    assert [p.day.isoformat() for p in board.growth] == list(tokyo["by_day"])
