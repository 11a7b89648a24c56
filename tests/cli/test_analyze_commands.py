"""``analyze aggregates|history|leadtimes`` and ``export-table``, driven through main()."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow.parquet as pq
import pytest

from analytics.generated_archive import (
    GROUPS,
    START,
    Planned,
    document,
    expected_days,
    expected_local,
    plan,
)
from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.humanize import human_duration as duration
from imixs_archive.storage.sqlite.backend import SQLiteBackend

PLANNED = plan()
FROM, TO = START.isoformat(), "2023-03-07"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("analyze") / "store"
    with SQLiteBackend(path) as backend, Archive(backend) as archive:
        for p in PLANNED:
            archive.store(document(p))
    return path


def run(capsys: pytest.CaptureFixture[str], store: Path, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--data-dir", str(store)])
    out, err = capsys.readouterr()
    return code, out, err


def test_aggregates_json_csv_and_table(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    code, out, err = run(
        capsys, store, "analyze", "aggregates", "--from", FROM, "--to", TO, "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    want = expected_days(PLANNED)
    assert {
        row["period"]: [row[k] for k in ("snapshots", "instances", "new_files", "new_bytes")]
        for row in data["rows"]
    } == {day.isoformat(): v["total"] for day, v in want.items()}

    code, out, _ = run(
        capsys,
        store,
        "analyze",
        "aggregates",
        "--from",
        FROM,
        "--to",
        TO,
        "--by",
        "group",
        "--per",
        "total",
        "--csv",
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {row["group"] for row in rows} == set(GROUPS)
    assert sum(int(row["snapshots"]) for row in rows) == len(PLANNED)
    assert "instance_days" in rows[0]

    code, out, err = run(capsys, store, "analyze", "aggregates", "--from", FROM, "--to", TO)
    assert code == 0 and out.splitlines()[0].split("\t")[0] == "period (UTC)"
    assert "7 stored" in err  # the days were stored by the first run


def test_history(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    p: Planned = next(p for p in PLANNED if p.steps == 4)
    code, out, err = run(capsys, store, "analyze", "history", p.origin)
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 5 and "added template.docx" in lines[2]
    assert "replaced a.pdf" in lines[3]
    assert "4 snapshots over 1d 6h" in err
    code, out, _ = run(capsys, store, "analyze", "history", p.origin, "--json")
    assert json.loads(out)["steps"][1]["since_previous"] == 36_000.0
    code, _, err = run(capsys, store, "analyze", "history", "00000000-0000-4000-8000-0000000000ff")
    assert code == 4 and "no snapshots" in err


def test_leadtimes(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    code, out, err = run(capsys, store, "analyze", "leadtimes", "--json")
    assert code == 0, err
    groups = {g["group"]: g for g in json.loads(out)["groups"]}
    finished = [p for p in PLANNED if p.step == p.steps - 1 and p.status == "Completed"]
    assert sum(g["count"] for g in groups.values()) == len(finished)
    code, out, _ = run(capsys, store, "analyze", "leadtimes", "--group", "Invoice", "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [row["group"] for row in rows] == ["Invoice"]
    assert float(rows[0]["p50"]) == groups["Invoice"]["p50"]
    code, out, _ = run(capsys, store, "analyze", "leadtimes", "--finished-status", "nothing")
    assert code == 0 and out.splitlines()[0].startswith("group")


def test_export_table(capsys: pytest.CaptureFixture[str], store: Path, tmp_path: Path) -> None:
    target = tmp_path / "table.parquet"
    code, out, err = run(
        capsys,
        store,
        "export-table",
        str(target),
        "--items",
        "$workflowgroup,$taskid",
        "--from",
        FROM,
        "--to",
        TO,
        "--format",
        "parquet",
        "--batch-rows",
        "7",
    )
    assert code == 0, err
    assert f"{len(PLANNED)} rows" in out and "$taskid int" in out
    table = pq.read_table(target)
    assert table.num_rows == len(PLANNED)
    assert sorted(table.column("$taskid").to_pylist()) == sorted(p.task for p in PLANNED)
    assert pq.ParquetFile(target).metadata.num_row_groups == -(-len(PLANNED) // 7)

    target = tmp_path / "newest.csv"
    code, out, err = run(
        capsys,
        store,
        "export-table",
        str(target),
        "--items",
        "$workflowstatus",
        "--newest",
        "--format",
        "csv",
    )
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(target.read_text("utf-8"))))
    assert len(rows) == len({p.origin for p in PLANNED})
    assert not (tmp_path / "newest.csv.part").exists()

    code, _, err = run(capsys, store, "export-table", str(target), "--items", "a:nonsense")
    assert code == 2 and "type must be one of" in err


def test_duration() -> None:
    assert [duration(s) for s in (0, 42, 750, 11_520, 183_600)] == [
        "0s",
        "42s",
        "12m 30s",
        "3h 12m",
        "2d 3h",
    ]


def test_aggregates_in_the_configured_zone_and_with_tz(
    capsys: pytest.CaptureFixture[str], store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def days(*extra: str) -> tuple[str, dict[str, list[int]]]:
        args = ("analyze", "aggregates", "--from", FROM, "--to", TO, "--json", *extra)
        code, out, err = run(capsys, store, *args)
        assert code == 0, err
        data = json.loads(out)
        rows = {r["period"]: [r["snapshots"], r["instances"]] for r in data["rows"]}
        return data["tz"], {day: v for day, v in rows.items() if v[0]}

    def truth(tz: str) -> dict[str, list[int]]:
        found = expected_local(PLANNED, ZoneInfo(tz))
        return {d.isoformat(): v for d, v in found.items() if FROM <= d.isoformat() <= TO}

    monkeypatch.setenv("ARCHIVE_TIMEZONE", "Pacific/Auckland")
    assert days() == ("Pacific/Auckland", truth("Pacific/Auckland"))
    assert days("--tz", "America/New_York") == ("America/New_York", truth("America/New_York"))
    assert truth("Pacific/Auckland") != truth("America/New_York")
    with pytest.raises(SystemExit) as stopped:
        run(capsys, store, "analyze", "aggregates", "--from", FROM, "--tz", "Nowhere")
    assert stopped.value.code == 2 and "unknown time zone" in capsys.readouterr().err
    monkeypatch.setenv("ARCHIVE_TIMEZONE", "Nowhere/Land")
    code, _, err = run(capsys, store, "analyze", "aggregates", "--from", FROM)
    assert code != 0 and "ARCHIVE_TIMEZONE" in err and "Traceback" not in err


def test_aggregates_without_to_end_at_the_last_day_with_snapshots(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    """Not a row of zeros for every day up to today (the README's own example printed a
    thousand); empty days before the last with data stay: a time axis is a time axis."""
    want = expected_days(PLANNED)
    last = max(day for day, v in want.items() if v["total"][0])
    code, out, err = run(capsys, store, "analyze", "aggregates", "--from", FROM, "--csv")
    assert code == 0, err
    periods = [row["period"] for row in csv.DictReader(io.StringIO(out))]
    assert periods[0] == FROM and periods[-1] == last.isoformat()
    assert len(periods) == (last - START).days + 1
    code, out, _ = run(
        capsys, store, "analyze", "aggregates", "--from", FROM, "--per", "total", "--json"
    )
    data = json.loads(out)
    assert data["to"] == last.isoformat()
    assert data["rows"][0]["period"] == f"{FROM}..{last.isoformat()}"
    assert data["rows"][0]["snapshots"] == len(PLANNED)
    after = (last + dt.timedelta(days=1)).isoformat()
    code, out, err = run(capsys, store, "analyze", "aggregates", "--from", after)
    assert code == 4 and out == "" and f"no snapshots from {after}" in err  # one rule: 4
