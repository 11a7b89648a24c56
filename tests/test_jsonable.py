"""``Jsonable``: a summary's fields as JSON, the skipped left out, the extra added, times,
days, enumerations and nested summaries converted."""

from __future__ import annotations

import ast
import datetime as dt
import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import imixs_archive
from imixs_archive.analytics.columns import Column
from imixs_archive.analytics.event_log import EventLogSummary
from imixs_archive.analytics.export_table import ExportSummary
from imixs_archive.analytics.process_map import Edge, ProcessMap, Variant
from imixs_archive.jsonable import Jsonable
from imixs_archive.services.reconcile import ReconcileReport
from imixs_archive.services.retention import Expired, RetentionReport


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Inner(Jsonable):
    day: dt.date


@dataclass
class Outer(Jsonable):
    JSON_SKIP = ("hidden",)
    JSON_EXTRA = ("double",)

    count: int
    when: dt.datetime
    colour: Colour
    inner: list[Inner] = field(default_factory=list)
    hidden: int = 7
    _private: int = 9

    @property
    def double(self) -> int:
        return self.count * 2


def test_a_summary_answers_its_fields_as_json() -> None:
    when = dt.datetime(2024, 4, 1, 8, 30, 15, 999_000, tzinfo=dt.UTC)
    summary = Outer(3, when, Colour.RED, [Inner(dt.date(2024, 4, 2))])
    assert summary.to_json() == {
        "count": 3,
        "when": "2024-04-01T08:30:15+00:00",
        "colour": "red",
        "inner": [{"day": "2024-04-02"}],
        "double": 6,
    }


T = dt.datetime(2024, 4, 1, 8, 30, 15, tzinfo=dt.UTC)


def _reports() -> dict[str, Any]:
    """One of each report whose JSON ``Jsonable`` writes, every field set."""
    return {
        "event log": EventLogSummary(traces=3, events=7, warnings={"w": 1}, seconds=1.23456),
        "process map": ProcessMap(
            group="G",
            first=dt.date(2024, 1, 1),
            last=dt.date(2024, 1, 31),
            zone="Europe/Berlin",
            instances=2,
            events=5,
            steps={"a": 2},
            edges=[Edge("a", "b", 1, 2.00049, ["x", "y"])],
            starts={"a": 2},
            ends={"b": 1},
            variants=[Variant(("a", "b"), 1, 3.14159)],
            warnings={"w": 1},
            counted={"kept": 1},
            seconds=0.12345,
        ),
        "export": ExportSummary(
            rows=4,
            batches=2,
            columns=[Column("a", "int", False), Column("b", "str", True)],
            warnings={"w": 2},
            seconds=2.71828,
            resumed="after 3",
        ),
        "export begun": ExportSummary(),
        "retention": RetentionReport(
            dry_run=True,
            instances_seen=9,
            held=["h"],
            held_count=1,
            expired=[Expired("u", ["s1", "s2"], "G", "T", "group:G=1y", T, T)],
            expired_count=1,
            expired_snapshots=2,
            files=3,
            bytes=4,
            snapshots_deleted=5,
            skipped=["k"],
            untimed=["n"],
            untimed_count=1,
            part=2,
            parts=3,
            resumed="after 4 instances",
            finished=False,
        ),
        "retention begun": RetentionReport(dry_run=False),
        "reconcile": ReconcileReport(
            before={"a": 1, "b": 2},
            after={"a": 1, "b": 3},
            days=4,
            facts_changed=5,
            days_changed=["2024-01-01"],
            resumed_after="2023-12-31",
            days_indexed=["2024-01-02"],
            rebuilt={"t": 6},
        ),
    }


EXPECTED = {
    "event log": '{"traces": 3, "events": 7, "warnings": {"w": 1}, "seconds": 1.235}',
    "process map": (
        '{"group": "G", "from": "2024-01-01", "to": "2024-01-31", "tz": "Europe/Berlin",'
        ' "instances": 2, "events": 5, "steps": {"a": 2}, "starts": {"a": 2}, "ends": {"b": 1},'
        ' "edges": [{"source": "a", "target": "b", "count": 1, "instances": 2,'
        ' "median_seconds": 2.0}], "variants": [{"steps": ["a", "b"], "count": 1,'
        ' "median_seconds": 3.142}], "warnings": {"w": 1}, "counted": {"kept": 1},'
        ' "seconds": 0.123}'
    ),
    "export": (
        '{"rows": 4, "batches": 2, "columns": [{"name": "a", "type": "int"},'
        ' {"name": "b", "type": "str[]"}], "warnings": {"w": 2}, "seconds": 2.718,'
        ' "resumed": "after 3"}'
    ),
    "export begun": (
        '{"rows": 0, "batches": 0, "columns": [], "warnings": {}, "seconds": 0.0, "resumed": null}'
    ),
    "retention": (
        '{"dry_run": true, "part": 2, "parts": 3, "resumed": "after 4 instances",'
        ' "finished": false, "instances_seen": 9, "expired_instances": 1,'
        ' "expired_snapshots": 2, "held": ["h"], "held_count": 1, "files": 3, "bytes": 4,'
        ' "snapshots_deleted": 5, "skipped": ["k"], "untimed": ["n"], "untimed_count": 1,'
        ' "instances": [{"uniqueid": "u", "snapshots": 2, "group": "G", "type": "T",'
        ' "rule": "group:G=1y", "last_snapshot": "2024-04-01T08:30:15+00:00",'
        ' "expired": "2024-04-01T08:30:15+00:00"}]}'
    ),
    "retention begun": (
        '{"dry_run": false, "part": 1, "parts": 1, "resumed": null, "finished": true,'
        ' "instances_seen": 0, "expired_instances": 0, "expired_snapshots": 0, "held": [],'
        ' "held_count": 0, "files": 0, "bytes": 0, "snapshots_deleted": 0, "skipped": [],'
        ' "untimed": [], "untimed_count": 0, "instances": []}'
    ),
    "reconcile": (
        '{"before": {"a": 1, "b": 2}, "after": {"a": 1, "b": 3}, "days": 4, "facts_changed": 5,'
        ' "days_changed": ["2024-01-01"], "resumed_after": "2023-12-31",'
        ' "days_indexed": ["2024-01-02"], "rebuilt": {"t": 6}, "drift": {"b": [2, 3]}}'
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_report_answers_the_same_json_text(name: str) -> None:
    """The JSON the CLI and the API print of each report, to the order of its keys."""
    assert json.dumps(_reports()[name].to_json()) == EXPECTED[name]


HAND_WRITTEN = {
    "analytics/aggregates.py:AggregateReport",
    "analytics/aggregates.py:AggregateRow",
    "analytics/archive_figures.py:_Sums",
    "analytics/cells.py:DayCells",
    "analytics/day_summary.py:DaySummary",
    "analytics/figures.py:DayFigures",
    "analytics/history.py:HistoryStep",
    "analytics/history.py:InstanceHistory",
    "analytics/history.py:ItemChange",
    "analytics/leadtimes.py:LeadTimes",
    "analytics/process_map.py:Edge",
    "archive/gc_runs.py:GcRun",
    "archive/stats.py:Stats",
    "services/retention.py:Expired",
    "services/retention.py:InstanceRetention",
    "web/dashboard.py:Dashboard",
}
"""The classes that write their own ``to_json``: each answers more than its fields (the
line above its ``def`` says what). A new one answers through ``Jsonable``, or is added here
with its reason where it is written."""


def _hand_written() -> set[str]:
    package = Path(imixs_archive.__file__).parent
    found: set[str] = set()
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name != "Jsonable":
                methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
                if "to_json" in methods:
                    found.add(f"{path.relative_to(package).as_posix()}:{node.name}")
    return found


def test_no_to_json_is_written_by_hand_but_the_listed() -> None:
    assert sorted(_hand_written() - HAND_WRITTEN) == []


@dataclass
class Run(Jsonable):
    JSON_NAMES = (("first", "from"),)
    JSON_ROUNDED = ("seconds",)
    JSON_NULL_IF_EMPTY = ("resumed",)

    first: dt.date
    seconds: float
    resumed: str = ""
    edge: Edge | None = None


def test_names_rounded_seconds_empty_as_null_and_nested_to_json() -> None:
    run = Run(dt.date(2024, 1, 2), 1.23456, edge=Edge("a", "b", 1, 0.5, ["x"]))
    assert run.to_json() == {
        "from": "2024-01-02",
        "seconds": 1.235,
        "resumed": None,
        "edge": {"source": "a", "target": "b", "count": 1, "instances": 1, "median_seconds": 0.5},
    }
    assert Run(dt.date(2024, 1, 2), 2.0, "after 3").to_json()["resumed"] == "after 3"
