"""Benchmark of the analytics: the day-aggregate query over a year of generated data, and
the Parquet (and CSV) export.

A year of process instances on the embedded store: each day ``--per-day`` snapshots
(instances of three to five steps a few hours apart, ~20 items each, multi-values, an
attachment per instance and a template shared by all), stored through ``Archive.store``.
Then:

- **aggregates, first run**: every day computed from the archive and stored;
- **aggregates, stored**: the same query again (reads one row per day);
- **aggregates, live**: only today and the grace day (the web page's refresh);
- **export**: ``export_table`` of every snapshot with 8 items to Parquet and to CSV, each
  in a child process so its peak RSS is its own, for the whole year and for a quarter
  (memory must not grow with the rows).

    .venv/bin/python bench/analytics.py                   # the recorded run
    .venv/bin/python bench/analytics.py --per-day 20      # a quick one

Not a test: figures depend on the machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from imixs_archive.analytics.aggregates import aggregate_days
from imixs_archive.analytics.columns import parse_items
from imixs_archive.analytics.export_table import ExportSpec, export_table
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document
from imixs_archive.storage.sqlite.backend import SQLiteBackend

FIRST = dt.date(2024, 1, 1)
GROUPS = ("Invoice", "Contract", "Ticket", "Order", "Complaint")
STATUSES = ("Open", "In Review", "Approved", "Completed")
PEOPLE = [f"user{n:03d}" for n in range(60)]
ITEMS = "$workflowgroup,$workflowstatus,$taskid,$creator,amount,approved,due,namteam"
TEMPLATE = random.Random(0).randbytes(30_000)


def snapshot(rng: random.Random, origin: str, step: int, when: dt.datetime, last: bool) -> Document:
    group = GROUPS[int(origin[:8], 16) % len(GROUPS)]
    doc = Document(
        {
            "$uniqueid": f"{origin}-{int(when.timestamp() * 1000)}",
            "$created": when,
            "$modified": when,
            "type": "snapshot-workitem",
            "$workflowgroup": group,
            "$workflowstatus": "Completed" if last else STATUSES[min(step, 2)],
            "$taskid": 1000 + 10 * step,
            "$creator": rng.choice(PEOPLE),
            "amount": round(rng.uniform(10, 10_000), 2),
            "approved": rng.random() < 0.5,
            "due": when + dt.timedelta(days=14),
            "namteam": rng.sample(PEOPLE, rng.randint(1, 4)),
            **{f"txt{n}": f"some business text {rng.getrandbits(40):x}" for n in range(10)},
        }
    )
    files = {"invoice.pdf": ["application/pdf", origin.encode() * 300, {}]}
    if step:
        files["template.docx"] = ["application/msword", TEMPLATE, {}]
    doc["$file"] = [files]
    return doc


def generate(store: Path, per_day: int, days: int) -> int:
    rng = random.Random(1)
    count = 0
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        for day in range(days):
            start = dt.datetime.combine(FIRST + dt.timedelta(days=day), dt.time(7), dt.UTC)
            for n in range(per_day // 4):
                origin = f"{day:08x}-0000-4000-8000-{n:012x}"
                steps = rng.randint(3, 5)
                for step in range(steps):
                    when = start + dt.timedelta(minutes=n, hours=5 * step)
                    archive.store(snapshot(rng, origin, step, when, step == steps - 1))
                    count += 1
    return count


def timed(action: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def run_aggregates(store: Path, days: int, workers: int) -> dict[str, Any]:
    last = FIRST + dt.timedelta(days=days - 1)
    now = dt.datetime.combine(last, dt.time(18), dt.UTC)
    figures: dict[str, Any] = {}
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        report, seconds = timed(
            lambda: aggregate_days(archive, FIRST, last, now=now, workers=workers)
        )
        snapshots = sum(day.total.snapshots for day in report.days)
        figures["first run"] = {
            "s": seconds,
            "days": len(report.days),
            "snapshots": snapshots,
            "snapshots/s": snapshots / seconds,
        }
        again, seconds = timed(lambda: aggregate_days(archive, FIRST, last, now=now))
        figures["stored"] = {
            "s": seconds,
            "stored days": again.count("stored"),
            "live days": again.count("live"),
        }
        berlin, seconds = timed(
            lambda: aggregate_days(archive, FIRST, last, now=now, tz="Europe/Berlin")
        )
        figures["stored, days of Europe/Berlin"] = {
            "s": seconds,
            "stored days": berlin.count("stored"),
            "live days": berlin.count("live"),
        }
        yesterday = last - dt.timedelta(days=1)
        _live, seconds = timed(lambda: aggregate_days(archive, yesterday, last, now=now))
        figures["live (2 days)"] = {"s": seconds}
        rows, seconds = timed(lambda: again.rows("creator", "month"))
        figures["rollup by creator per month"] = {"s": seconds, "rows": len(rows)}
    return figures


def child_export(store: Path, target: Path, fmt: str, days: int) -> None:
    last = FIRST + dt.timedelta(days=days - 1)
    spec = ExportSpec(parse_items(ITEMS), first=FIRST, last=last, format=fmt)
    with SQLiteBackend(store) as backend, Archive(backend) as archive, target.open("wb") as out:
        summary = export_table(archive, spec, out)
    size = target.stat().st_size
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"rows": summary.rows, "s": summary.seconds, "bytes": size, "peak": peak}))


def run_export(store: Path, where: Path, fmt: str, days: int) -> dict[str, Any]:
    target = where / f"table.{fmt}"
    command = [sys.executable, __file__, "--child-export", str(store), str(target), fmt, str(days)]
    result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return {
        "rows": result["rows"],
        "s": round(result["s"], 2),
        "rows/s": round(result["rows"] / result["s"]),
        "MB out": round(result["bytes"] / 1e6, 2),
        "MB/s out": round(result["bytes"] / 1e6 / result["s"], 2),
        "peak RSS MB": round(result["peak"] / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--per-day", type=int, default=100, help="snapshots a day (about)")
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--keep", action="store_true", help="keep the generated store")
    parser.add_argument("--no-export", action="store_true", help="the aggregates only")
    parser.add_argument("--child-export", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_export:
        store, target, fmt, days = args.child_export
        child_export(Path(store), Path(target), fmt, int(days))
        return
    where = Path(tempfile.mkdtemp(prefix="bench-analytics-", dir="/tmp"))
    try:
        store = where / "store"
        count, seconds = timed(lambda: generate(store, args.per_day, args.days))
        size = sum(f.stat().st_size for f in store.iterdir())
        print(
            f"generated {count} snapshots over {args.days} days in {seconds:.0f} s "
            f"({size / 1e6:.0f} MB store)"
        )
        for name, figures in run_aggregates(store, args.days, args.workers).items():
            rounded = {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}
            print(f"aggregates {name}: {json.dumps(rounded)}")
        for fmt in () if args.no_export else ("parquet", "csv"):
            for days in (args.days // 4, args.days):
                figures = run_export(store, where, fmt, days)
                print(f"export {fmt}, {days} days: {json.dumps(figures)}")
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
        )
    finally:
        if args.keep:
            print(f"kept {where}")
        else:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
