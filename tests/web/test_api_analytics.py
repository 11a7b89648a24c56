"""``/api/analytics`` over HTTP (in process; the streamed export over the socket), against
the generated archive whose figures are known from its plan
(``tests/analytics/generated_archive.py``): aggregates, history, lead times and the
streamed export, each with anonymous, reader and manager."""

from __future__ import annotations

import csv
import datetime as dt
import io
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow.parquet as pq
import pytest

from analytics.generated_archive import (
    START,
    STEP_HOURS,
    Planned,
    document,
    expected_days,
    expected_local,
    plan,
)
from imixs_archive.web.export_stream import WRITERS, Pipe, iter_rest, start_writer
from web.live import LiveServer, serve_documents
from web.test_api_access import assert_problem

FIRST, LAST = START, START + dt.timedelta(days=9)
ENDPOINTS = [
    f"/api/analytics/aggregates?from={FIRST}&to={LAST}",
    "/api/analytics/history/00000000-0000-4000-8000-000000000000",
    "/api/analytics/leadtimes",
    "/api/analytics/export?items=$workflowgroup&format=csv",
]


@pytest.fixture(scope="module")
def planned() -> list[Planned]:
    return plan()


@pytest.fixture(scope="module")
def gen_live(
    planned: list[Planned], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    tmp = Path(tmp_path_factory.mktemp("analytics"))
    yield from serve_documents(tmp, [document(p) for p in planned])


def figures(row: dict[str, Any], per: str = "day") -> list[int]:
    instances = row["instances" if per == "day" else "instance_days"]
    return [int(row["snapshots"]), int(instances), int(row["new_files"]), int(row["new_bytes"])]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_every_analytics_endpoint_needs_a_reader(gen_live: LiveServer, path: str) -> None:
    with gen_live.client() as anonymous:
        assert_problem(anonymous.get(path), 401)
    for who in ("reader", "manager", "token-reader"):
        with gen_live.client(who) as client:
            answer = client.get(path)
            assert answer.status_code in (200, 404), (who, path, answer.text)


def test_aggregates_per_day_match_the_plan(gen_live: LiveServer, planned: list[Planned]) -> None:
    truth = expected_days(planned)
    with gen_live.client("reader") as client:
        answer = client.get(
            "/api/analytics/aggregates", params={"from": str(FIRST), "to": str(LAST)}
        )
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert (data["from"], data["to"], data["by"], data["per"]) == (
        str(FIRST),
        str(LAST),
        None,
        "day",
    )
    rows = {row["period"]: row for row in data["rows"]}
    assert len(rows) == (LAST - FIRST).days + 1  # every day of the range, empty ones too
    for day, row in rows.items():
        want = truth.get(dt.date.fromisoformat(day), {"total": [0, 0, 0, 0]})["total"]
        assert figures(row) == want, day


def test_aggregates_by_group_over_the_range(gen_live: LiveServer, planned: list[Planned]) -> None:
    want: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for entry in expected_days(planned).values():
        for value, numbers in entry["by"]["group"].items():
            want[value] = [a + b for a, b in zip(want[value], numbers, strict=True)]
    with gen_live.client("reader") as client:
        data = client.get(
            "/api/analytics/aggregates",
            params={"from": str(FIRST), "to": str(LAST), "by": "group", "per": "total"},
        ).json()
    found = {row["value"]: figures(row, "total") for row in data["rows"]}
    assert found == dict(want)
    assert [row["snapshots"] for row in data["rows"]] == sorted(
        (row["snapshots"] for row in data["rows"]), reverse=True
    )


def test_aggregates_in_a_time_zone(gen_live: LiveServer, planned: list[Planned]) -> None:
    # 06:00 UTC is 19:00 in Auckland (+13 in March), 16:00 UTC the next morning there
    auckland = ZoneInfo("Pacific/Auckland")
    truth = expected_local(planned, auckland)
    with gen_live.client("reader") as client:
        data = client.get(
            "/api/analytics/aggregates",
            params={"from": str(FIRST), "to": str(LAST), "tz": "Pacific/Auckland"},
        ).json()
    assert data["tz"] == "Pacific/Auckland"
    found = {
        dt.date.fromisoformat(row["period"]): [row["snapshots"], row["instances"]]
        for row in data["rows"]
        if row["snapshots"]
    }
    assert found == {day: v for day, v in truth.items() if FIRST <= day <= LAST}
    assert found != {day: v[:2] for day, v in expected_local(planned, dt.UTC).items()}


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"from": "2023-03-09", "to": "2023-03-01"}, "after"),
        ({"from": "2023-03-01", "by": "colour"}, "by: one of"),
        ({"from": "2023-03-01", "per": "week"}, "per: one of"),
        ({"from": "1900-01-01", "to": "2023-01-01"}, "20 years"),
        ({"from": "last tuesday"}, "from"),
        ({}, "from"),
        ({"from": "2023-03-01", "tz": "Mars/Olympus_Mons"}, "tz: unknown time zone"),
    ],
)
def test_bad_aggregate_parameters_are_400(
    gen_live: LiveServer, params: dict[str, str], says: str
) -> None:
    with gen_live.client("reader") as client:
        body = assert_problem(client.get("/api/analytics/aggregates", params=params), 400)
    assert says in str(body["message"])


def test_history_of_one_instance(gen_live: LiveServer, planned: list[Planned]) -> None:
    longest = max(planned, key=lambda p: p.steps)
    with gen_live.client("reader") as client:
        answer = client.get(f"/api/analytics/history/{longest.origin}")
        unknown = client.get("/api/analytics/history/ffffffff-0000-4000-8000-000000000000")
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["snapshots"] == longest.steps == 4
    assert data["duration"] == (longest.steps - 1) * STEP_HOURS * 3600
    steps = data["steps"]
    assert [s["since_previous"] for s in steps] == [None] + [STEP_HOURS * 3600.0] * 3
    assert [s["task"] for s in steps] == ["1000", "1010", "1020", "1030"]
    files = [[(f["kind"], f["name"]) for f in s["files"]] for s in steps]
    assert files[0] == [("added", "a.pdf")]
    assert files[1] == [("added", "template.docx")]
    assert files[2] == [("replaced", "a.pdf")]
    assert files[3] == []
    assert {c["name"] for c in steps[1]["items"]} >= {"$taskid", "subject"}
    assert_problem(unknown, 404)


def lead_truth(planned: list[Planned], statuses: set[str]) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = defaultdict(list)
    for p in planned:
        if p.step == p.steps - 1 and p.status.lower() in statuses:
            groups[p.group].append(p.step * STEP_HOURS * 3600.0)
    return groups


def test_lead_times_per_group_and_filters(gen_live: LiveServer, planned: list[Planned]) -> None:
    with gen_live.client("reader") as client:
        default = client.get("/api/analytics/leadtimes").json()
        invoice = client.get("/api/analytics/leadtimes", params={"group": "Invoice"}).json()
        both = client.get("/api/analytics/leadtimes", params={"finished": "open,completed"}).json()
        bad = client.get(
            "/api/analytics/leadtimes", params={"from": "2023-03-05", "to": "2023-03-01"}
        )
        nothing = client.get(
            "/api/analytics/leadtimes", params={"finished": ",", "finished_type": ""}
        )
    want = lead_truth(planned, {"completed"})
    assert default["unit"] == "seconds"
    found = {g["group"]: g for g in default["groups"]}
    assert set(found) == set(want)
    for group, samples in want.items():
        assert found[group]["count"] == len(samples)
        assert found[group]["min"] == min(samples) and found[group]["max"] == max(samples)
    assert [g["group"] for g in invoice["groups"]] == ["Invoice"]
    assert sum(g["count"] for g in both["groups"]) == len({p.origin for p in planned})
    assert both["finished"]["statuses"] == ["completed", "open"]
    assert_problem(bad, 400)
    assert_problem(nothing, 400)


def test_export_csv_is_streamed_with_a_file_name(
    gen_live: LiveServer, planned: list[Planned]
) -> None:
    params = {"items": "$workflowgroup,$taskid:int", "format": "csv"}
    with (
        gen_live.socket_client("reader") as client,
        client.stream("GET", "/api/analytics/export", params=params) as answer,
    ):
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/csv")
        assert "content-length" not in answer.headers  # streamed, not built first
        disposition = answer.headers["content-disposition"]
        body = answer.read().decode("utf-8")
    assert disposition == 'attachment; filename="imixs-archive-export.csv"'
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == len(planned)
    by_id = {p.snapshot_id: p for p in planned}
    for row in rows:
        p = by_id[row["snapshot"]]
        assert (row["uniqueid"], row["$workflowgroup"], int(row["$taskid"])) == (
            p.origin,
            p.group,
            p.task,
        )


def test_export_parquet_newest_per_instance(gen_live: LiveServer, planned: list[Planned]) -> None:
    params = {"items": "$workflowstatus", "from": str(FIRST), "to": str(LAST), "newest": "true"}
    with gen_live.client("manager") as client:
        answer = client.get("/api/analytics/export", params=params)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/vnd.apache.parquet"
    assert answer.headers["content-disposition"] == (
        f'attachment; filename="imixs-archive-export-from-{FIRST}-to-{LAST}-newest.parquet"'
    )
    table = pq.read_table(io.BytesIO(answer.content))
    assert table.column_names == ["snapshot", "uniqueid", "modified", "$workflowstatus"]
    newest = {p.snapshot_id: p.status for p in planned if p.step == p.steps - 1}
    got = dict(
        zip(table["snapshot"].to_pylist(), table["$workflowstatus"].to_pylist(), strict=True)
    )
    assert got == newest


@pytest.mark.parametrize(
    "params",
    [
        {"items": "$workflowgroup", "format": "xlsx"},
        {"items": "snapshot"},
        {"items": "amount:money"},
        {"items": " , "},
        {"items": "a", "from": "2023-03-05", "to": "2023-03-01"},
        {},
    ],
)
def test_bad_export_parameters_are_400(gen_live: LiveServer, params: dict[str, str]) -> None:
    with gen_live.client("reader") as client:
        assert_problem(client.get("/api/analytics/export", params=params), 400)


def test_the_pipe_holds_a_bounded_amount_and_stops_a_writer_nobody_reads() -> None:
    pipe = Pipe(chunk=1024, depth=4)
    written = threading.Event()

    def write(out: Any) -> None:
        for _ in range(100_000):  # ~100 MB if nothing held it back
            out.write(b"x" * 1000)
        written.set()

    ended = start_writer(write, pipe)
    chunks = iter_rest(pipe, b"")
    read = len(next(chunks)) + len(next(chunks))
    deadline = time.monotonic() + 60  # the writer goes on (when the machine lets it) ...
    while pipe.tell() == read:
        assert time.monotonic() < deadline, "the writer wrote nothing more"
        time.sleep(0.01)
    time.sleep(0.3)  # ... and has had the time to write much more than it may hold
    held = pipe.tell() - read  # written so far, less what was read
    # A chunk is at most 1024 + one write: four in the queue, one waiting, one filling.
    assert 0 < held <= (4 + 2) * (1024 + 1000)
    chunks.close()  # the client went away
    assert ended.wait(60) and not written.is_set()


def test_exports_are_written_on_a_few_threads_kept_for_them() -> None:
    """A thread per export opened a store connection per export (issue 48)."""
    seen: set[threading.Thread] = set()
    for _ in range(3 * WRITERS):
        assert start_writer(lambda _out: seen.add(threading.current_thread()), Pipe()).wait(60)
    assert len(seen) <= WRITERS


def test_an_export_beyond_the_writers_is_503_until_one_ends(gen_live: LiveServer) -> None:
    release = threading.Event()
    held = [start_writer(lambda _out: release.wait(60), Pipe()) for _ in range(WRITERS)]
    try:
        with gen_live.client("reader") as client:
            refused = client.get("/api/analytics/export", params={"items": "$workflowgroup"})
            assert_problem(refused, 503)
            assert refused.headers["retry-after"] == "30"
            assert "exports are being written" in refused.json()["detail"]
            release.set()
            assert all(ended.wait(60) for ended in held)
            answer = client.get("/api/analytics/export", params={"items": "$workflowgroup"})
            assert answer.status_code == 200
    finally:
        release.set()
