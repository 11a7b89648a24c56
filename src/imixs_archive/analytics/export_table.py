"""Export for analysts: one row per snapshot (or per newest snapshot of each process
instance) with chosen items as typed columns, streamed to Parquet or CSV.

Every table starts with ``snapshot`` (the snapshot id), ``uniqueid`` (its process
instance) and ``modified`` (``$modified``, UTC); then one column per chosen item (types:
``columns.py``). Rows are read, converted and written in batches of ``batch_rows``: a
Parquet row group, or CSV lines, per batch. Memory holds one batch, whatever the number
of rows.

Which snapshots, and in which order:

* a ``first`` and ``last`` day: the snapshots whose ``$modified`` falls on those days,
  day by day (the by-day index; day partitions and snapshots read concurrently);
* otherwise the process instances one after the other, in the store's range order of
  ``snapshots_by_uniqueid`` (instances read concurrently): each instance's snapshots,
  oldest first, keeping those on or after ``first`` / on or before ``last`` when one of
  them is given; with ``newest_only`` its newest snapshot whose ``$modified`` lies in the
  range (all of time without one). This walk is the one an export to a file can stop and
  go on, or split into parts (``export_runs.py``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import IO, Any, Protocol

from imixs_archive.analytics._pool import DEFAULT_WORKERS, ordered_map
from imixs_archive.analytics.columns import Column, ColumnSpec, cell, infer
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import origin_id, snapshot_time
from imixs_archive.document.labels import utc
from imixs_archive.document.model import Document
from imixs_archive.document.plain import plain
from imixs_archive.errors import ConfigError
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.base import Position
from imixs_archive.timezones import day_bounds

FORMATS = ("parquet", "csv")
FIXED_COLUMNS = (
    Column("snapshot", "str", False),
    Column("uniqueid", "str", False),
    Column("modified", "datetime", False),
)


class TableWriter(Protocol):
    def write_batch(self, rows: Sequence[Sequence[Any]]) -> None: ...

    def close(self) -> None: ...


@dataclass
class ExportSpec:
    items: list[ColumnSpec]
    first: dt.date | None = None
    last: dt.date | None = None
    newest_only: bool = False
    format: str = "parquet"
    batch_rows: int = 10_000
    workers: int = DEFAULT_WORKERS
    tz: dt.tzinfo = dt.UTC
    """The time zone of ``first`` and ``last``."""


@dataclass
class ExportSummary(Jsonable):
    JSON_ROUNDED = ("seconds",)
    JSON_NULL_IF_EMPTY = ("resumed",)

    rows: int = 0
    batches: int = 0
    columns: list[Column] = field(default_factory=list)
    warnings: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    resumed: str = ""
    """Where a run that went on took up (``export_runs.py``; '' when it began)."""


def export_table(archive: Archive, spec: ExportSpec, out: IO[bytes]) -> ExportSummary:
    """Write the table to ``out`` (a binary stream); the summary says what was written."""
    check_spec(spec)
    started = time.perf_counter()
    size = max(1, spec.batch_rows)
    docs = iter_export_docs(archive, spec)
    sample = list(islice(docs, size))  # the only batch held as documents: types are inferred
    columns = [*FIXED_COLUMNS, *infer(spec.items, [doc for _, doc in sample])]
    summary = ExportSummary(columns=columns)
    writer = open_writer(spec.format, columns, out)
    rows = to_rows(sample, columns, summary.warnings)
    del sample
    while rows:
        writer.write_batch(rows)
        summary.rows += len(rows)
        summary.batches += 1
        rows = []  # released before the next batch is read: one batch in memory
        rows = to_rows(islice(docs, size), columns, summary.warnings)
    writer.close()
    summary.seconds = time.perf_counter() - started
    return summary


def check_spec(spec: ExportSpec) -> None:
    """ConfigError for a format or a column an export cannot have."""
    if spec.format not in FORMATS:
        raise ConfigError(f"unknown export format {spec.format!r}; one of {', '.join(FORMATS)}")
    clash = {s.item for s in spec.items} & {c.name for c in FIXED_COLUMNS}
    if clash:
        raise ConfigError(f"{', '.join(sorted(clash))}: already a column of every export")


def to_rows(
    found: Iterable[tuple[str, Document]], columns: list[Column], warnings: dict[str, int]
) -> list[list[Any]]:
    """The table's rows of these snapshots; what did not fit its column counted in
    ``warnings``."""
    return [_row(sid, doc, columns, warnings) for sid, doc in found]


def open_writer(
    format: str, columns: list[Column], out: IO[bytes], *, header: bool = True
) -> TableWriter:
    """A writer of batches of rows in ``format``; ``header=False``: a CSV without its
    header line (a piece of a longer one)."""
    if format == "csv":
        return CsvWriter(columns, out, header=header)
    # pyarrow is large (~100 ms to import): loaded only when Parquet is written.
    from imixs_archive.analytics.parquet import ParquetTableWriter

    return ParquetTableWriter(columns, out)


def _row(
    snapshot_id: str, doc: Document, columns: list[Column], warnings: dict[str, int]
) -> list[Any]:
    modified = doc.get_first("$modified")
    row: list[Any] = [
        snapshot_id,
        origin_id(snapshot_id),
        utc(modified) if isinstance(modified, dt.datetime) else None,
    ]
    row += [cell(c, doc.get_values(c.name), warnings) for c in columns[len(FIXED_COLUMNS) :]]
    return row


# ---- which snapshots --------------------------------------------------------------------


def iter_export_docs(archive: Archive, spec: ExportSpec) -> Iterator[tuple[str, Document]]:
    """(snapshot id, snapshot without file contents) in export order."""
    if by_days(spec):
        assert spec.first is not None and spec.last is not None
        return _by_days(archive, spec.first, spec.last, spec.workers, spec.tz)
    return (found for _at, rows in instance_walk(archive, spec) for found in rows)


def by_days(spec: ExportSpec) -> bool:
    """Whether the export walks the days of a range (not the instances)."""
    return not spec.newest_only and spec.first is not None and spec.last is not None


def _in_range(
    doc: Document, first: dt.date | None, last: dt.date | None, tz: dt.tzinfo = dt.UTC
) -> bool:
    modified = doc.get_first("$modified")
    if not isinstance(modified, dt.datetime):
        return first is None and last is None
    day = utc(modified).astimezone(tz).date()
    return (first is None or day >= first) and (last is None or day <= last)


Found = list[tuple[str, Document]]


def instance_walk(
    archive: Archive,
    spec: ExportSpec,
    after: Position | None = None,
    upto: Position | None = None,
) -> Iterator[tuple[Position, Found]]:
    """(position, the instance's rows as (id, snapshot)) of each instance after ``after``
    up to ``upto``, in the store's range order; instances read on ``spec.workers``
    threads, a window of them in memory."""
    pick = _newest_of if spec.newest_only else _every_of

    def read(found: tuple[Position, list[str]]) -> tuple[Position, Found]:
        return found[0], pick(archive, spec, found[1])

    instances = archive.index.instances_in_range(after, upto)
    yield from ordered_map(read, instances, workers=spec.workers, window=2 * spec.workers)


def _every_of(archive: Archive, spec: ExportSpec, ids: list[str]) -> Found:
    found = []
    for snapshot_id in ids:
        doc = archive.load_complete(snapshot_id)
        if doc is not None and _in_range(doc, spec.first, spec.last, spec.tz):
            found.append((snapshot_id, doc))
    return found


def _by_days(
    archive: Archive, first: dt.date, last: dt.date, workers: int, tz: dt.tzinfo
) -> Iterator[tuple[str, Document]]:
    """The UTC day partitions the local days cover, kept to the local days."""

    def load(snapshot_id: str) -> tuple[str, Document | None]:
        return snapshot_id, archive.load_complete(snapshot_id)

    utc_first = day_bounds(first, tz)[0].date()
    utc_last = (day_bounds(last, tz)[1] - dt.timedelta(microseconds=1)).date()
    days = archive.days.with_snapshots(utc_first, utc_last)  # not every calendar day
    partitions = ordered_map(
        archive.days.snapshot_ids, days, workers=min(4, workers), window=min(4, workers)
    )
    ids = (sid for day in partitions for sid in day)
    for snapshot_id, doc in ordered_map(load, ids, workers=workers):
        if doc is not None and _in_range(doc, first, last, tz):
            yield snapshot_id, doc


SLACK = dt.timedelta(days=2)
"""$modified and the id's time may straddle midnight, and the zone's day differ by one."""


def _newest_of(archive: Archive, spec: ExportSpec, ids: list[str]) -> Found:
    first, last = spec.first, spec.last
    for snapshot_id in reversed(ids):
        day = snapshot_time(snapshot_id).date()
        if last is not None and day > last + SLACK:
            continue
        if first is not None and day < first - SLACK:
            return []
        doc = archive.load_complete(snapshot_id)
        if doc is not None and _in_range(doc, first, last, spec.tz):
            return [(snapshot_id, doc)]
    return []


# ---- CSV --------------------------------------------------------------------------------


class CsvWriter:
    """RFC 4180 CSV, UTF-8, a header line; lists as JSON arrays, datetimes ISO 8601 (UTC),
    booleans ``true``/``false``, bytes base64, null as an empty cell."""

    def __init__(self, columns: Iterable[Column], out: IO[bytes], *, header: bool = True) -> None:
        self._text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
        self._csv = csv.writer(self._text)
        if header:
            self._csv.writerow([c.name for c in columns])

    def write_batch(self, rows: Sequence[Sequence[Any]]) -> None:
        self._csv.writerows([[_csv_cell(value) for value in row] for row in rows])

    def close(self) -> None:
        self._text.flush()
        self._text.detach()  # the caller closes ``out``


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps([plain(v) for v in value], ensure_ascii=False)
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    converted = plain(value)
    return converted if isinstance(converted, str) else str(converted)
