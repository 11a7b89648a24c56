"""Event logs for process mining tools (pm4py, ProM, Disco, Celonis): IEEE 1849 XES
(``.xes``, ``.xes.gz``) and OCEL 2.0 JSON (``.jsonocel``), streamed.

One trace per process instance (``concept:name``: its ``$uniqueid``), one event per
snapshot, oldest first (by ``$modified``, then the snapshot id's time): ``concept:name``
the step (``process_steps.py``), ``time:timestamp`` its ``$modified``, ``org:resource``
its editor, ``lifecycle:transition`` ``complete``, and ``imixs:group``,
``imixs:status``, ``imixs:taskid``, ``imixs:snapshot`` and the chosen items (their first
value) as attributes. A range keeps the snapshots whose ``$modified`` falls on its days
in the given zone (as ``export_table.py``); groups keep the events of those workflow
groups; an instance without an event kept has no trace.

Which instances: without a range or groups, one paged pass over them
(``Archive.index.iter_instances``); with a range or groups, those the range's days' index and
facts name (``archive/facts.py``: no snapshot read to find them; their ids held as a set).
A few instances are in flight; each instance's snapshots near the range (by their ids'
time) are read, reduced to their events and written. No more than a few traces are held,
whatever the archive holds. OCEL lists its objects apart from its events: they are written to a
temporary file while the events are written, and appended at the end.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any
from xml.sax.saxutils import quoteattr

from imixs_archive.analytics._pool import DEFAULT_WORKERS, ordered_map
from imixs_archive.analytics.day_facts import instances_on_days, within_archive
from imixs_archive.analytics.process_steps import NO_TASK, NO_TASK_WARNING, editor, step_name
from imixs_archive.archive.facts import Fact, dimension_labels
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import (
    origin_id,
    snapshot_order,
    snapshot_time,
)
from imixs_archive.document.labels import label, utc
from imixs_archive.document.model import Document
from imixs_archive.errors import ConfigError, NotFoundError
from imixs_archive.jsonable import Jsonable
from imixs_archive.timezones import day_bounds

FORMATS = ("xes", "xes.gz", "jsonocel")
MEDIA_TYPES = {
    "xes": "application/xml",
    "xes.gz": "application/gzip",
    "jsonocel": "application/json",
}
OBJECT_TYPE = "process instance"
_SLACK = dt.timedelta(days=2)
"""$modified and the id's time may straddle midnight, and the zone's day differ by one."""
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def format_of(path: str) -> str:
    """The format a file name asks for (``.xes``, ``.xes.gz``, ``.jsonocel``)."""
    name = path.lower()
    for fmt in sorted(FORMATS, key=len, reverse=True):
        if name.endswith("." + fmt):
            return fmt
    raise ConfigError(f"{path}: name it .xes, .xes.gz or .jsonocel (the format of the log)")


@dataclass
class EventLogSpec:
    format: str = "xes"
    first: dt.date | None = None
    last: dt.date | None = None
    tz: dt.tzinfo = dt.UTC
    """The time zone of ``first`` and ``last``."""
    groups: frozenset[str] = frozenset()
    """Only events of these workflow groups (all when empty)."""
    items: Sequence[str] = ()
    workers: int = DEFAULT_WORKERS


@dataclass
class EventLogSummary(Jsonable):
    JSON_ROUNDED = ("seconds",)

    traces: int = 0
    events: int = 0
    warnings: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class Event:
    time: dt.datetime
    snapshot_id: str
    step: str
    resource: str
    group: str
    status: str
    task: str
    items: tuple[tuple[str, Any], ...]


def write_event_log(archive: Archive, spec: EventLogSpec, out: IO[bytes]) -> EventLogSummary:
    """Write the log to ``out``; NotFoundError when no snapshot is in it (nothing worth a
    file: the caller drops what was written)."""
    if spec.format not in FORMATS:
        raise ConfigError(f"unknown event log format {spec.format!r}; one of {', '.join(FORMATS)}")
    started = time.perf_counter()
    summary = EventLogSummary()
    writer: _LogWriter = _OcelWriter(out) if spec.format == "jsonocel" else _XesWriter(out, spec)
    for uniqueid, events in iter_traces(archive, spec):
        writer.trace(uniqueid, events)
        summary.traces += 1
        summary.events += len(events)
        missing = sum(1 for e in events if e.step == NO_TASK)
        if missing:
            summary.warnings[NO_TASK_WARNING] = summary.warnings.get(NO_TASK_WARNING, 0) + missing
    if not summary.traces:
        raise NotFoundError(f"no snapshots{_described(spec)}")
    writer.close()
    summary.seconds = time.perf_counter() - started
    return summary


def _described(spec: EventLogSpec) -> str:
    text = ""
    if spec.groups:
        text += f" of workflow group {', '.join(sorted(spec.groups))}"
    if spec.first is not None or spec.last is not None:
        text += f" modified {spec.first or '...'} to {spec.last or '...'}"
    return text


# ---- which events -----------------------------------------------------------------------


def iter_traces(archive: Archive, spec: EventLogSpec) -> Iterator[tuple[str, list[Event]]]:
    """(uniqueid, its events in time order) of each instance with an event in the log."""
    low = _near(spec.first, spec.tz, 0, -_SLACK)
    high = _near(spec.last, spec.tz, 1, _SLACK)

    def events_of(ids: list[str]) -> tuple[str, list[Event]]:
        events = []
        for snapshot_id in ids:
            when = snapshot_time(snapshot_id)
            if (low is not None and when < low) or (high is not None and when > high):
                continue
            doc = archive.load_complete(snapshot_id)
            if doc is None:
                continue  # being written or deleted
            event = _event(snapshot_id, doc, spec)
            if event is not None:
                events.append(event)
        events.sort(key=lambda e: (e.time, snapshot_order(e.snapshot_id)))
        return origin_id(ids[0]), events

    if spec.groups or (spec.first is not None and spec.last is not None):
        instances = _instances_met(archive, spec, low, high)
    else:
        instances = archive.index.iter_instances()
    for uniqueid, events in ordered_map(events_of, instances, workers=spec.workers):
        if events:
            yield uniqueid, events


def _instances_met(
    archive: Archive, spec: EventLogSpec, low: dt.datetime | None, high: dt.datetime | None
) -> Iterator[list[str]]:
    """The ids (oldest first) of each process instance with a snapshot on the UTC days
    about the range (the archive's days when open) whose fact names one of the groups (or
    that has no fact: its XML decides), from the day index and the facts."""
    first = low.date() if low is not None else None
    last = high.date() if high is not None else None
    days = within_archive(archive, first, last, dt.datetime.now(dt.UTC).date())
    if days is None:
        return iter(())

    def of_groups(_snapshot_id: str, fact: Fact | None) -> bool:
        return not spec.groups or fact is None or fact.label_map()["group"] in spec.groups

    return instances_on_days(archive, days[0], days[1], of_groups)


def _near(day: dt.date | None, tz: dt.tzinfo, end: int, slack: dt.timedelta) -> dt.datetime | None:
    """The start (``end`` 0) or end (1) of a local day, ``slack`` beyond; None for no day,
    or one at the calendar's edge (year 1, 9999: no bound there)."""
    if day is None:
        return None
    try:
        return day_bounds(day, tz)[end] + slack
    except (OverflowError, ValueError):
        return None


def _event(snapshot_id: str, doc: Document, spec: EventLogSpec) -> Event | None:
    modified = doc.get_first("$modified")
    when = utc(modified) if isinstance(modified, dt.datetime) else snapshot_time(snapshot_id)
    day = when.astimezone(spec.tz).date()
    if (spec.first is not None and day < spec.first) or (spec.last is not None and day > spec.last):
        return None
    labels = dimension_labels(doc)
    if spec.groups and labels["group"] not in spec.groups:
        return None
    return Event(
        time=when,
        snapshot_id=snapshot_id,
        step=step_name(labels),
        resource=editor(doc),
        group=labels["group"],
        status=labels["status"],
        task=labels["task"],
        items=tuple((item, doc.get_first(item)) for item in spec.items),
    )


# ---- writers ----------------------------------------------------------------------------


class _LogWriter:
    def trace(self, uniqueid: str, events: list[Event]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def _text(value: str) -> str:
    """Text XML 1.0 can carry: characters it forbids become U+FFFD."""
    return _NOT_XML.sub("\ufffd", value)


def _stamp(when: dt.datetime) -> str:
    return utc(when).isoformat(timespec="milliseconds")


_XES_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<log xes.version="1849-2016" xes.features="" xmlns="http://www.xes-standard.org/">
<extension name="Concept" prefix="concept" uri="http://www.xes-standard.org/concept.xesext"/>
<extension name="Time" prefix="time" uri="http://www.xes-standard.org/time.xesext"/>
<extension name="Organizational" prefix="org" uri="http://www.xes-standard.org/org.xesext"/>
<extension name="Lifecycle" prefix="lifecycle" uri="http://www.xes-standard.org/lifecycle.xesext"/>
<global scope="trace"><string key="concept:name" value="__INVALID__"/></global>
<global scope="event">
<string key="concept:name" value="__INVALID__"/>
<date key="time:timestamp" value="1970-01-01T00:00:00.000+00:00"/>
<string key="lifecycle:transition" value="complete"/>
</global>
<classifier name="Activity" keys="concept:name"/>
<string key="concept:name" value="imixs-archive"/>
"""


class _XesWriter(_LogWriter):
    """IEEE 1849-2016 XES, UTF-8; gzip-compressed for ``xes.gz``."""

    def __init__(self, out: IO[bytes], spec: EventLogSpec) -> None:
        self._gzip = (
            gzip.GzipFile(fileobj=out, mode="wb", mtime=0) if spec.format == "xes.gz" else None
        )
        self._out = out
        self._write(_XES_HEAD)

    def _write(self, text: str) -> None:
        (self._gzip or self._out).write(text.encode())

    def trace(self, uniqueid: str, events: list[Event]) -> None:
        parts = [f"<trace>{_attribute('concept:name', uniqueid)}\n"]
        for e in events:
            attributes = [
                _attribute("concept:name", e.step),
                _attribute("time:timestamp", e.time),
                *([_attribute("org:resource", e.resource)] if e.resource else []),
                _attribute("lifecycle:transition", "complete"),
                _attribute("imixs:group", e.group),
                _attribute("imixs:status", e.status),
                _attribute("imixs:taskid", e.task),
                _attribute("imixs:snapshot", e.snapshot_id),
                *(_attribute(name, value) for name, value in e.items if value is not None),
            ]
            parts.append(f"<event>{''.join(attributes)}</event>\n")
        parts.append("</trace>\n")
        self._write("".join(parts))

    def close(self) -> None:
        self._write("</log>\n")
        if self._gzip is not None:
            self._gzip.close()  # the caller closes ``out``


def _attribute(key: str, value: Any) -> str:
    if isinstance(value, bool):
        tag, text = "boolean", "true" if value else "false"
    elif isinstance(value, int):
        tag, text = "int", str(value)
    elif isinstance(value, float):
        tag, text = "float", repr(value)
    elif isinstance(value, dt.datetime):
        tag, text = "date", _stamp(value)
    else:
        tag, text = "string", label(value)
    return f"<{tag} key={quoteattr(_text(key))} value={quoteattr(_text(text))}/>"


class _OcelWriter(_LogWriter):
    """OCEL 2.0 JSON: events as they come; the objects (one per instance) kept in a
    temporary file meanwhile; the event types (the steps met) at the end."""

    ATTRIBUTES = ("resource", "group", "status", "taskid", "snapshot")

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        # closed by close(); an error on the way leaves it to the garbage collector
        self._objects: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._types: set[str] = set()
        self._items: set[str] = set()
        self._first_event = True
        self._first_object = True
        self._out.write(b'{"events": [\n')

    def trace(self, uniqueid: str, events: list[Event]) -> None:
        lines = []
        for e in events:
            self._types.add(e.step)
            values = [e.resource, e.group, e.status, e.task, e.snapshot_id]
            attributes = [
                {"name": name, "value": value}
                for name, value in zip(self.ATTRIBUTES, values, strict=True)
            ]
            for name, value in e.items:
                if value is not None:
                    self._items.add(name)
                    attributes.append({"name": name, "value": label(value)})
            event = {
                "id": e.snapshot_id,
                "type": e.step,
                "time": _stamp(e.time),
                "attributes": attributes,
                "relationships": [{"objectId": uniqueid, "qualifier": "instance"}],
            }
            lines.append(("" if self._first_event else ",\n") + json.dumps(event))
            self._first_event = False
        self._out.write("".join(lines).encode())
        first = events[0]
        instance = {
            "id": uniqueid,
            "type": OBJECT_TYPE,
            "attributes": [{"name": "group", "time": _stamp(first.time), "value": first.group}],
            "relationships": [],
        }
        separator = "" if self._first_object else ",\n"
        self._objects.write((separator + json.dumps(instance)).encode())
        self._first_object = False

    def close(self) -> None:
        self._out.write(b'\n],\n"objects": [\n')
        self._objects.seek(0)
        while chunk := self._objects.read(1 << 20):
            self._out.write(chunk)
        self._objects.close()
        declared = [
            {"name": name, "type": "string"} for name in (*self.ATTRIBUTES, *sorted(self._items))
        ]
        tail = {
            "eventTypes": [{"name": name, "attributes": declared} for name in sorted(self._types)],
            "objectTypes": [
                {"name": OBJECT_TYPE, "attributes": [{"name": "group", "type": "string"}]}
            ],
        }
        self._out.write(b"\n],\n" + json.dumps(tail)[1:].encode() + b"\n")
