"""A generated archive whose true figures are known from its parameters.

Instances start on each of ``days`` consecutive UTC days; instance ``i`` of day ``d``
has ``1 + (d + i) % 4`` snapshots, ten hours apart (so later steps fall on later days),
saved with a CET offset (so the UTC day is not the local one). Files: step 0 attaches
``a.pdf`` (content unique to the instance), step 1 adds ``template.docx`` (the same bytes
in every instance: new only once in the whole archive), step 2 replaces ``a.pdf``; one
instance also carries its ``a.pdf`` bytes as ``copy.pdf`` (same content, one file).

:func:`expected_days` computes the figures from this plan alone - a set of contents seen
so far, walked in time order - never from the code under test.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.document.model import Document
from support.snapshots import file_values

START = dt.date(2023, 3, 1)
CET = dt.timezone(dt.timedelta(hours=1))
GROUPS = ("Invoice", "Contract", "Ticket")
CREATORS = ("anna", "bob", "carla")
TEMPLATE = b"template " * 500
STEP_HOURS = 10


@dataclass
class Planned:
    origin: str
    step: int
    steps: int
    millis: int
    group: str
    status: str
    task: int
    creator: str
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def snapshot_id(self) -> str:
        return f"{self.origin}-{self.millis}"

    @property
    def day(self) -> dt.date:
        return dt.datetime.fromtimestamp(self.millis / 1000, dt.UTC).date()

    def labels(self) -> dict[str, str]:
        return {
            "type": "snapshot-workitem",
            "group": self.group,
            "status": self.status,
            "task": str(self.task),
            "creator": self.creator,
        }


def origin_of(day: int, index: int) -> str:
    return f"{day:08x}-0000-4000-8000-{index:012x}"


def plan(days: int = 6, per_day: int = 3) -> list[Planned]:
    planned: list[Planned] = []
    for d in range(days):
        start = dt.datetime.combine(START + dt.timedelta(days=d), dt.time(6), dt.UTC)
        for i in range(per_day + d % 2):
            origin = origin_of(d, i)
            steps = 1 + (d + i) % 4
            own = f"invoice {d}/{i} ".encode() * (50 + 10 * i)
            for step in range(steps):
                when = start + dt.timedelta(minutes=7 * i, hours=STEP_HOURS * step)
                files = {"a.pdf": own if step < 2 else own + b" v2"}
                if step >= 1:
                    files["template.docx"] = TEMPLATE
                if d == 1 and i == 0:
                    files["copy.pdf"] = own
                last = step == steps - 1
                planned.append(
                    Planned(
                        origin=origin,
                        step=step,
                        steps=steps,
                        millis=int(when.timestamp() * 1000),
                        group=GROUPS[(d + i) % 3],
                        status="Completed" if last and i % 2 == 0 else "Open",
                        task=1000 + 10 * step,
                        creator=CREATORS[i % 3],
                        files=files,
                    )
                )
    return planned


def document(p: Planned) -> Document:
    when = dt.datetime.fromtimestamp(p.millis / 1000, CET)
    doc = Document(
        {
            "$uniqueid": p.snapshot_id,
            "$created": dt.datetime.combine(START, dt.time(0), CET),
            "$modified": when,
            "type": "snapshot-workitem",
            "$workflowgroup": p.group,
            "$workflowstatus": p.status,
            "$taskid": p.task,
            "$creator": p.creator,
            "subject": f"step {p.step}",
        }
    )
    doc["$file"] = [{name: file_values(content) for name, content in p.files.items()}]
    return doc


@dataclass
class Figures:
    snapshots: int = 0
    origins: set[str] = field(default_factory=set)
    new_files: int = 0
    new_bytes: int = 0

    def as_list(self) -> list[int]:
        return [self.snapshots, len(self.origins), self.new_files, self.new_bytes]


def expected_days(planned: list[Planned]) -> dict[dt.date, dict[str, Any]]:
    """day -> {"total": [s, i, f, b], "by": {dimension: {value: [s, i, f, b]}}}."""
    seen: set[str] = set()
    totals: dict[dt.date, Figures] = defaultdict(Figures)
    by: dict[tuple[dt.date, str, str], Figures] = defaultdict(Figures)
    for p in sorted(planned, key=lambda p: (p.millis, p.snapshot_id)):
        new_files = new_bytes = 0
        for content in p.files.values():
            md5 = hashlib.md5(content).hexdigest()
            if md5 not in seen:
                seen.add(md5)
                new_files += 1
                new_bytes += len(content)
        targets = [totals[p.day]] + [by[(p.day, k, v)] for k, v in p.labels().items()]
        for figures in targets:
            figures.snapshots += 1
            figures.origins.add(p.origin)
            figures.new_files += new_files
            figures.new_bytes += new_bytes
    result: dict[dt.date, dict[str, Any]] = {}
    for day, figures in totals.items():
        result[day] = {"total": figures.as_list(), "by": defaultdict(dict)}
    for (day, dimension, value), figures in by.items():
        result[day]["by"][dimension][value] = figures.as_list()
    for entry in result.values():
        entry["by"] = dict(entry["by"])
    return result


def expected_local(planned: list[Planned], tz: dt.tzinfo) -> dict[dt.date, list[int]]:
    """day in ``tz`` -> [snapshots, distinct instances], each save time converted alone."""
    snapshots: dict[dt.date, int] = defaultdict(int)
    origins: dict[dt.date, set[str]] = defaultdict(set)
    for p in planned:
        day = dt.datetime.fromtimestamp(p.millis / 1000, tz).date()
        snapshots[day] += 1
        origins[day].add(p.origin)
    return {day: [snapshots[day], len(origins[day])] for day in snapshots}
