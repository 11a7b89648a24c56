"""The process map of one workflow group over a range of local days: the directly-follows
graph (how often each step follows another, the median time between them), the start and
end steps, and the variants (distinct paths) with their counts and throughput times.

The events are those of the event log (``event_log.py``) for the same group and range:
a snapshot is a step (``process_steps.py``) of its process instance's trace; the range
keeps the snapshots whose ``$modified`` falls on its days in the zone. Here they come
from the snapshots' facts (``archive/facts.py``: group, status, task id and the
quarter-hour of ``$modified``), never from their XML, and the time of a step is that of
its snapshot id (the save, to the millisecond), which orders a trace.

Kept per finished local month or day and per workflow group (``month_cache.py``, kind
``dfg:<group>``): the unit's events of the group, per local day, per process instance
(step, time; the step names once per unit). A range reads its group's kept units only,
takes the days it covers, joins each instance's events across units into its trace and
counts the graph and the variants from the traces: exact (medians included), at the cost
of reading the group's events of the range as two numbers an event, never a snapshot, and
never another group's. What is not over yet is counted from its days each time.
"""

from __future__ import annotations

import datetime as dt
import itertools
import operator
import statistics
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics.day_facts import read_day_facts, within_archive
from imixs_archive.analytics.month_cache import PeriodCache
from imixs_archive.analytics.process_steps import NO_TASK, NO_TASK_WARNING, step_name
from imixs_archive.archive.facts import SLOT_MINUTES
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import origin_id, snapshot_millis
from imixs_archive.jsonable import Jsonable
from imixs_archive.timezones import day_bounds, epoch_ms, zone_label

KIND = "dfg"
"""Kept figures of a group are of kind ``dfg:<group>``."""
UNREADABLE_WARNING = "snapshots that could not be read (run verify)"


@dataclass
class Edge:
    source: str
    target: str
    count: int
    median_seconds: float
    instances: list[str] = field(repr=False)
    """The process instances that took this edge (each once), in the order first met."""

    # Own JSON: counts its instances, does not list them.
    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "count": self.count,
            "instances": len(self.instances),
            "median_seconds": round(self.median_seconds, 3),
        }


@dataclass
class Variant(Jsonable):
    JSON_ROUNDED = ("median_seconds",)

    steps: tuple[str, ...]
    count: int
    median_seconds: float
    """Throughput: the first step to the last, median over the variant's traces."""


@dataclass
class ProcessMap(Jsonable):
    JSON_NAMES = (("first", "from"), ("last", "to"), ("zone", "tz"))
    JSON_ROUNDED = ("seconds",)

    group: str
    first: dt.date
    last: dt.date
    zone: str
    instances: int = 0
    events: int = 0
    steps: dict[str, int] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    ends: dict[str, int] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    variants: list[Variant] = field(default_factory=list)
    warnings: dict[str, int] = field(default_factory=dict)
    counted: dict[str, int] = field(default_factory=dict)
    """Units read from kept figures (``kept``), counted from their days and kept
    (``counted``), counted and not kept: not over yet (``live``)."""
    seconds: float = 0.0

    def edge(self, source: str, target: str) -> Edge | None:
        return next((e for e in self.edges if (e.source, e.target) == (source, target)), None)


def process_map(
    archive: Archive,
    group: str,
    first: dt.date,
    last: dt.date,
    *,
    tz: dt.tzinfo = dt.UTC,
    now: dt.datetime | None = None,
) -> ProcessMap:
    """The map of ``group`` over the local days ``[first, last]`` (see the module
    docstring); a range wider than the archive's days reads only those."""
    started = time.perf_counter()
    now = now or dt.datetime.now(dt.UTC)
    found = ProcessMap(group, first, last, zone_label(tz))
    days = within_archive(archive, first, last, now.astimezone(tz).date())
    if days is None:
        return found
    traces: dict[str, list[tuple[int, str]]] = {}
    cache = PeriodCache(archive, tz, now)
    for unit_first, unit_last, part_first, part_last in cache.units(*days):
        source = ["kept"]

        def count_unit(
            a: dt.date = unit_first, b: dt.date = unit_last, said: list[str] = source
        ) -> tuple[Any, bool]:
            said[0] = "counted"
            return count_days(archive, group, a, b, tz)

        data = cache.get(f"{KIND}:{group}", (unit_first, unit_last), count_unit)
        if data is None:  # not over yet
            data, source[0] = count_days(archive, group, part_first, part_last, tz)[0], "live"
        found.counted[source[0]] = found.counted.get(source[0], 0) + 1
        _take(data, part_first.isoformat(), part_last.isoformat(), traces, found.warnings)
    _figures(found, traces.items())
    found.seconds = time.perf_counter() - started
    return found


def count_days(
    archive: Archive, group: str, first: dt.date, last: dt.date, tz: dt.tzinfo
) -> tuple[dict[str, Any], bool]:
    """The events of ``group`` on the local days ``[first, last]``, from their UTC days'
    facts (no XML), per local day and process instance: (step, millis) pairs; and
    whether they may be kept (no snapshot needed its fact counted now, none was being
    written or deleted, all could be read)."""
    start, end = day_bounds(first, tz)[0], day_bounds(last, tz)[1]
    steps: dict[str, int] = {}
    days: dict[str, dict[str, list[int]]] = {}
    settled, unreadable = True, 0
    for day in archive.days.with_snapshots(
        start.date(), (end - dt.timedelta(microseconds=1)).date()
    ):
        read = read_day_facts(archive, day)
        settled, unreadable = settled and read.settled, unreadable + read.unreadable
        midnight = dt.datetime.combine(day, dt.time(), dt.UTC)
        for snapshot_id, fact in read:
            when = midnight + dt.timedelta(minutes=fact.slot * SLOT_MINUTES)
            if not start <= when < end:
                continue
            labels = fact.label_map()
            if labels["group"] != group:
                continue
            step = steps.setdefault(step_name(labels), len(steps))
            millis = snapshot_millis(snapshot_id) or epoch_ms(when)
            local = when.astimezone(tz).date().isoformat()
            trace = days.setdefault(local, {}).setdefault(origin_id(snapshot_id), [])
            trace.extend((step, millis))
    data = {"steps": list(steps), "days": days, "unreadable": unreadable}
    return data, settled and not unreadable


def _take(
    data: dict[str, Any],
    first: str,
    last: str,
    traces: dict[str, list[tuple[int, str]]],
    warnings: dict[str, int],
) -> None:
    """Add a unit's events on the days ``[first, last]`` to the traces."""
    names: list[str] = data["steps"]
    if data.get("unreadable"):
        warnings[UNREADABLE_WARNING] = warnings.get(UNREADABLE_WARNING, 0) + data["unreadable"]
    for day, instances in sorted(data["days"].items()):
        if not first <= day <= last:
            continue
        for uniqueid, flat in instances.items():
            trace = traces.setdefault(uniqueid, [])
            trace += zip(flat[1::2], map(names.__getitem__, flat[0::2]), strict=True)


def _figures(found: ProcessMap, traces: Iterable[tuple[str, list[tuple[int, str]]]]) -> None:
    """The graph, the start and end steps and the variants of the traces (per event a few
    steps of the interpreter: what a kept map costs is mostly this)."""
    steps: Counter[str] = Counter()
    starts: Counter[str] = Counter()
    ends: Counter[str] = Counter()
    edges: dict[tuple[str, str], tuple[list[int], list[str]]] = {}
    variants: dict[tuple[str, ...], list[int]] = {}
    by_time = operator.itemgetter(0)
    for uniqueid, trace in traces:
        trace.sort(key=by_time)  # stable: the order met on a tie
        times, path = zip(*trace, strict=True)
        steps.update(path)
        starts[path[0]] += 1
        ends[path[-1]] += 1
        gaps = map(operator.sub, times[1:], times)
        for pair, gap in zip(itertools.pairwise(path), gaps, strict=False):
            edge = edges.get(pair)
            if edge is None:
                edge = edges[pair] = ([], [])
            edge[0].append(gap)
            edge[1].append(uniqueid)
        variants.setdefault(path, []).append(times[-1] - times[0])
        found.instances += 1
        found.events += len(path)
    if steps[NO_TASK]:
        found.warnings[NO_TASK_WARNING] = steps[NO_TASK]
    found.steps = dict(steps.most_common())
    found.starts = dict(starts.most_common())
    found.ends = dict(ends.most_common())
    found.edges = sorted(
        (
            Edge(a, b, len(ms), statistics.median(ms) / 1000, list(dict.fromkeys(takers)))
            for (a, b), (ms, takers) in edges.items()
        ),
        key=lambda e: (-e.count, e.source, e.target),
    )
    found.variants = sorted(
        (Variant(path, len(ms), statistics.median(ms) / 1000) for path, ms in variants.items()),
        key=lambda v: (-v.count, v.steps),
    )
