"""Process mining: the event log (XES, XES.gz, OCEL 2.0) and the process map, checked
against pm4py (the reference implementation, reading the exported XES) and against the
plan the data was generated from."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import itertools
import json
import random
import statistics
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from imixs_archive.analytics.event_log import EventLogSpec, write_event_log
from imixs_archive.analytics.process_map import ProcessMap, process_map
from imixs_archive.analytics.process_steps import NO_TASK, NO_TASK_WARNING
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document
from imixs_archive.errors import NotFoundError
from imixs_archive.storage.model import ARCHIVE_SNAPSHOT_FACTS
from support.demo_docs import demo_documents

pm4py = pytest.importorskip("pm4py")
# pm4py's own advice (a faster optional reader), not a problem of this archive
pytestmark = pytest.mark.filterwarnings("ignore:Install the optional requirement:UserWarning")

BERLIN = ZoneInfo("Europe/Berlin")
XES = "{http://www.xes-standard.org/}"
NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)  # every day of the data is over


# ---- generated data: paths with loops and skips, times about midnight ----------------

MODEL = {
    "Claim": ["Filed", "Assessed", "Returned", "Assessed", "Paid"],
    "Order": ["Drafted", "Submitted", "Approved", "Shipped"],
}


@dataclass(frozen=True)
class Step:
    origin: str
    millis: int
    group: str
    status: str
    task: int | None

    @property
    def name(self) -> str:
        if self.status:
            return self.status
        return f"task {self.task}" if self.task is not None else NO_TASK


def generated_steps(seed: int = 7) -> list[Step]:
    """Instances over three months: each walks its group's steps, sometimes skipping one
    or going back (a loop); steps 2 to 40 hours apart, many near midnight in Berlin; a
    few steps carry only a task id, or neither a task id nor a name."""
    rng = random.Random(seed)
    start = dt.datetime(2024, 1, 20, 22, 30, tzinfo=dt.UTC)
    steps: list[Step] = []
    for number in range(70):
        group = "Claim" if number % 3 else "Order"
        path = list(MODEL[group])
        if rng.random() < 0.3:
            del path[rng.randrange(1, len(path))]
        if rng.random() < 0.2:
            at = rng.randrange(1, len(path))
            path.insert(at, path[at - 1])  # the same step again
        path = path[: rng.randint(1, len(path))]
        when = start + dt.timedelta(days=rng.uniform(0, 75), minutes=rng.choice([0, 55, 65]))
        origin = f"{number:08x}-0000-4000-8000-{number:012x}"
        for index, status in enumerate(path):
            task: int | None = 100 * (index + 1)
            odd = rng.random()
            if odd < 0.05:
                status = ""  # a task id only
            elif odd < 0.08:
                status, task = "", None  # neither
            millis = int(when.timestamp() * 1000)
            steps.append(Step(origin, millis, group, status, task))
            when += dt.timedelta(hours=rng.uniform(2, 40))
    return steps


def step_document(step: Step) -> Document:
    items: dict[str, Any] = {
        "$uniqueid": f"{step.origin}-{step.millis}",
        "$modified": dt.datetime.fromtimestamp(step.millis / 1000, BERLIN),
        "type": "workitem",
        "$workflowgroup": step.group,
        "$editor": "anna",
        "amount": 12.5,
    }
    if step.status:
        items["$workflowstatus"] = step.status
    if step.task is not None:
        items["$taskid"] = step.task
    return Document(items)


def expected(
    steps: list[Step], group: str, first: dt.date, last: dt.date, tz: dt.tzinfo
) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, ...]]]:
    """The directly-follows pairs and the variants, from the plan alone."""
    traces: dict[str, list[Step]] = {}
    for s in sorted(steps, key=lambda s: s.millis):
        day = dt.datetime.fromtimestamp(s.millis / 1000, tz).date()
        if s.group == group and first <= day <= last:
            traces.setdefault(s.origin, []).append(s)
    pairs: Counter[tuple[str, str]] = Counter()
    variants: Counter[tuple[str, ...]] = Counter()
    for trace in traces.values():
        names = tuple(s.name for s in trace)
        pairs.update(itertools.pairwise(names))
        variants[names] += 1
    return pairs, variants


@pytest.fixture
def mined(archive: Archive) -> tuple[Archive, list[Step]]:
    steps = generated_steps()
    for step in steps:
        archive.store(step_document(step))
    return archive, steps


# ---- helpers ---------------------------------------------------------------------------


def export(archive: Archive, path: Path, **spec: Any) -> Path:
    fmt = "xes.gz" if path.name.endswith(".xes.gz") else path.suffix[1:]
    with path.open("wb") as out:
        write_event_log(archive, EventLogSpec(format=fmt, workers=2, **spec), out)
    return path


def reference(path: Path) -> tuple[Any, Any, Any, Any, Any]:
    """pm4py's directly-follows graph, start and end steps, variants and median times
    of the XES file."""
    log = pm4py.read_xes(str(path))
    dfg, starts, ends = pm4py.discover_dfg(log)
    performance, _s, _e = pm4py.discover_performance_dfg(log)
    variants = {
        tuple(v): (n if isinstance(n, int) else len(n)) for v, n in pm4py.get_variants(log).items()
    }
    return dfg, starts, ends, variants, performance


def assert_same(found: ProcessMap, path: Path) -> None:
    dfg, starts, ends, variants, performance = reference(path)
    assert {(e.source, e.target): e.count for e in found.edges} == dict(dfg)
    assert found.starts == dict(starts)
    assert found.ends == dict(ends)
    assert {v.steps: v.count for v in found.variants} == variants
    for e in found.edges:
        assert e.median_seconds == pytest.approx(performance[(e.source, e.target)]["median"])


# ---- against pm4py ---------------------------------------------------------------------


def test_demo_month_map_is_what_pm4py_finds_in_the_xes(archive: Archive, tmp_path: Path) -> None:
    for doc in demo_documents():
        archive.store(doc)
    groups = ("Ticket", "Invoice", "Purchase order", "Leave request")
    first, last = dt.date(2024, 1, 1), dt.date(2024, 12, 31)
    for group in groups:
        path = export(archive, tmp_path / f"{group}.xes", groups=frozenset({group}))
        found = process_map(archive, group, first, last, now=NOW)
        assert found.instances >= 5 and len(found.edges) >= 2
        assert_same(found, path)
    # the demo's groups run their steps in order: the map says so
    ticket = process_map(archive, "Ticket", first, last, now=NOW)
    assert {(e.source, e.target) for e in ticket.edges} == {
        ("Open", "In Progress"),
        ("In Progress", "Completed"),
    }


def test_generated_map_is_what_pm4py_and_the_plan_say(
    mined: tuple[Archive, list[Step]], tmp_path: Path
) -> None:
    archive, steps = mined
    first, last = dt.date(2024, 2, 1), dt.date(2024, 3, 15)  # parts of months, in Berlin
    for group in MODEL:
        path = export(
            archive, tmp_path / f"{group}.xes", groups=frozenset({group}), first=first, last=last
        )
        path.with_suffix(".gz").write_bytes(gzip.compress(path.read_bytes()))
        found = process_map(archive, group, first, last, tz=BERLIN, now=NOW)
        pairs, variants = expected(steps, group, first, last, BERLIN)
        assert {(e.source, e.target): e.count for e in found.edges} == dict(pairs)
        assert {v.steps: v.count for v in found.variants} == dict(variants)
        assert len(variants) >= 5  # loops and skips make several paths
        assert_same(found, path)
        # kept figures give the same map, read and not counted again
        again = process_map(archive, group, first, last, tz=BERLIN, now=NOW)
        assert again.counted.get("kept", 0) > 0 and "counted" not in again.counted
        assert again.to_json() | {"counted": 0, "seconds": 0} == found.to_json() | {
            "counted": 0,
            "seconds": 0,
        }


def test_compressed_xes_and_ocel_hold_the_same_events(
    mined: tuple[Archive, list[Step]], tmp_path: Path
) -> None:
    archive, steps = mined
    plain = export(archive, tmp_path / "log.xes", items=("amount",))
    packed = export(archive, tmp_path / "log.xes.gz", items=("amount",))
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    log = pm4py.read_xes(str(packed))
    assert log["case:concept:name"].nunique() == len({s.origin for s in steps})
    ocel_path = export(archive, tmp_path / "log.jsonocel", items=("amount",))
    ocel = pm4py.read_ocel2_json(str(ocel_path))
    assert len(ocel.events) == len(steps)
    assert len(ocel.objects) == len({s.origin for s in steps})
    assert Counter(ocel.events["ocel:activity"]) == Counter(s.name for s in steps)
    data = json.loads(ocel_path.read_text(encoding="utf-8"))
    assert {t["name"] for t in data["eventTypes"]} == {s.name for s in steps}


# ---- the log itself --------------------------------------------------------------------


def test_xes_traces_events_and_attributes(mined: tuple[Archive, list[Step]]) -> None:
    archive, steps = mined
    out = io.BytesIO()
    summary = write_event_log(archive, EventLogSpec(items=("amount",), workers=2), out)
    root = ET.fromstring(out.getvalue())
    traces = root.findall(f"{XES}trace")
    assert summary.traces == len(traces) == len({s.origin for s in steps})
    assert summary.events == len(steps)
    no_task = sum(1 for s in steps if s.name == NO_TASK)
    assert no_task and summary.warnings == {NO_TASK_WARNING: no_task}
    planned = {s.origin: sorted(steps_of(steps, s.origin), key=lambda s: s.millis) for s in steps}
    for trace in traces:
        uniqueid = attr(trace, "concept:name")
        events = trace.findall(f"{XES}event")
        assert [attr(e, "concept:name") for e in events] == [s.name for s in planned[uniqueid]]
        stamps = [attr(e, "time:timestamp") for e in events]
        assert stamps == sorted(stamps)
        first = events[0]
        assert attr(first, "org:resource") == "anna"
        assert attr(first, "lifecycle:transition") == "complete"
        assert attr(first, "imixs:group") == planned[uniqueid][0].group
        assert first.find(f"{XES}float[@key='amount']").get("value") == "12.5"  # type: ignore[union-attr]
        when = dt.datetime.fromisoformat(stamps[0])
        assert int(when.timestamp() * 1000) == planned[uniqueid][0].millis


def steps_of(steps: list[Step], origin: str) -> list[Step]:
    return [s for s in steps if s.origin == origin]


def attr(element: ET.Element, key: str) -> str:
    for child in element:
        if child.get("key") == key:
            return child.get("value", "")
    raise AssertionError(f"no attribute {key}")


def test_names_are_escaped(archive: Archive) -> None:
    doc = step_document(Step("abcdef01-0000-4000-8000-000000000001", 1706000000000, "G", "", 1))
    doc["$workflowstatus"] = "A <b> & \"c\" 'd'"
    archive.store(doc)
    out = io.BytesIO()
    write_event_log(archive, EventLogSpec(), out)
    event = ET.fromstring(out.getvalue()).find(f"{XES}trace/{XES}event")
    assert event is not None and attr(event, "concept:name") == "A <b> & \"c\" 'd'"


def test_a_range_or_group_without_snapshots_is_not_found(
    mined: tuple[Archive, list[Step]],
) -> None:
    archive, _steps = mined
    for spec in (
        EventLogSpec(first=dt.date(2020, 1, 1), last=dt.date(2020, 2, 1)),
        EventLogSpec(groups=frozenset({"Nothing"})),
    ):
        with pytest.raises(NotFoundError, match="no snapshots"):
            write_event_log(archive, spec, io.BytesIO())


# ---- the map ---------------------------------------------------------------------------


def test_map_medians_and_throughput_from_the_plan(mined: tuple[Archive, list[Step]]) -> None:
    archive, steps = mined
    first, last = dt.date(2024, 1, 1), dt.date(2024, 12, 31)
    found = process_map(archive, "Order", first, last, now=NOW)
    traces: dict[str, list[Step]] = {}
    for s in sorted(steps, key=lambda s: s.millis):
        if s.group == "Order":
            traces.setdefault(s.origin, []).append(s)
    gaps: dict[tuple[str, str], list[int]] = {}
    throughput: dict[tuple[str, ...], list[int]] = {}
    for trace in traces.values():
        for a, b in itertools.pairwise(trace):
            gaps.setdefault((a.name, b.name), []).append(b.millis - a.millis)
        throughput.setdefault(tuple(s.name for s in trace), []).append(
            trace[-1].millis - trace[0].millis
        )
    assert {(e.source, e.target): e.median_seconds for e in found.edges} == {
        pair: statistics.median(ms) / 1000 for pair, ms in gaps.items()
    }
    assert {v.steps: v.median_seconds for v in found.variants} == {
        path: statistics.median(ms) / 1000 for path, ms in throughput.items()
    }
    edge = found.edges[0]
    took = [o for o, t in traces.items() if (edge.source, edge.target) in pairs_of(t)]
    assert sorted(edge.instances) == sorted(took)


def pairs_of(trace: list[Step]) -> set[tuple[str, str]]:
    return {(a.name, b.name) for a, b in itertools.pairwise(trace)}


def test_kept_figures_follow_a_change_to_a_closed_day(
    mined: tuple[Archive, list[Step]],
) -> None:
    archive, _steps = mined
    first, last = dt.date(2024, 1, 1), dt.date(2024, 6, 30)
    before = process_map(archive, "Order", first, last, now=NOW)
    assert process_map(archive, "Order", first, last, now=NOW).counted == {"kept": 6}
    late = Step("ffffffff-0000-4000-8000-000000000000", 1709294400000, "Order", "Rare", 1)
    archive.store(step_document(late))  # 2024-03-01, a closed day
    after = process_map(archive, "Order", first, last, now=NOW)
    assert after.counted == {"kept": 5, "counted": 1}
    assert after.steps["Rare"] == 1 and after.instances == before.instances + 1


def test_an_empty_range_or_archive_has_an_empty_map(archive: Archive) -> None:
    empty = process_map(archive, "Order", dt.date(2024, 1, 1), dt.date(2024, 1, 31), now=NOW)
    assert empty.instances == 0 and empty.edges == []
    archive.store(
        step_document(Step("abcdef01-0000-4000-8000-0000000000aa", 1706000000000, "G", "A", 1))
    )
    far = process_map(archive, "G", dt.date(1, 1, 1), dt.date(9999, 12, 31), now=NOW)
    assert far.instances == 1 and far.steps == {"A": 1}


def test_a_snapshot_without_a_fact_is_counted_from_its_xml_and_kept_the_next_time(
    archive: Archive,
) -> None:
    origin = "abcdef02-0000-4000-8000-0000000000bb"
    first = Step(origin, 1706000000000, "G", "A", 1)  # 2024-01-23
    second = Step(origin, 1706100000000, "G", "B", 2)
    for step in (first, second):
        archive.store(step_document(step))
    day = dt.datetime.fromtimestamp(second.millis / 1000, dt.UTC).date()
    # as the Java service writes a snapshot: no fact
    archive.backend.delete(
        ARCHIVE_SNAPSHOT_FACTS, {"day": day, "snapshot": f"{origin}-{second.millis}"}
    )
    january = (dt.date(2024, 1, 1), dt.date(2024, 1, 31))
    found = process_map(archive, "G", *january, now=NOW)
    assert [(e.source, e.target) for e in found.edges] == [("A", "B")]
    assert found.counted == {"counted": 1}  # counted, not kept: a fact was missing
    assert process_map(archive, "G", *january, now=NOW).counted == {"counted": 1}
    assert process_map(archive, "G", *january, now=NOW).counted == {"kept": 1}
