"""Benchmark of process mining on the scale stores (``bench/scale.py``'s archives of
``bench/scale_data.py``): the process map of one workflow group over one year, first
(cold: no kept figures of kind ``dfg``; every finished month counted from its days'
facts and kept) and kept (warm: the months read back), the Process map page as a viewer
opens it (in process: its groups, the map, Graphviz's layout, the HTML), and the event
log of the same group and year, and of the whole archive, each in a child process so its
peak RSS is its own (memory must not grow with the events).

    .venv/bin/python bench/process_map.py /tmp/scale-10000 /tmp/scale-100000

Writes kept figures (kind ``dfg``) into the stores and removes those it finds before the
cold run; nothing else is changed. Not a test: figures depend on the machine. Results go
to bench/README.md ("Process mining").
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from imixs_archive.analytics.day_store import drop_period, read_months
from imixs_archive.analytics.process_map import KIND, ProcessMap, _figures, _take, process_map
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.storage.factory import open_backend
from imixs_archive.timezones import zone, zone_label

FIRST, LAST = "2025-11-01", "2026-10-31"  # the scale stores' last year


def drop_kept(archive: Archive, group: str, tz_name: str) -> int:
    label, kind = zone_label(zone(tz_name)), f"{KIND}:{group}"
    keys = list(read_months(archive, label, kind))
    for key in keys:
        drop_period(archive, label, kind, key)
    return len(keys)


def timed_map(archive: Archive, group: str, first: dt.date, last: dt.date, tz: str) -> Any:
    started = time.perf_counter()
    found = process_map(archive, group, first, last, tz=zone(tz))
    return time.perf_counter() - started, found


def page_seconds(folder: Path, group: str, first: str, last: str) -> tuple[float, int]:
    """The first GET of the page in a fresh app (no figures cached in the app; kept
    figures in the store), as a viewer opens it."""
    from fastapi.testclient import TestClient

    from imixs_archive.web.app import create_app

    settings = load_settings({"ARCHIVE_DATA_DIR": str(folder)})
    backend = open_backend(settings)
    try:
        app = create_app(settings, backend)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            started = time.perf_counter()
            answer = client.get(
                "/ui/process-map", params={"group": group, "from": first, "to": last}
            )
            seconds = time.perf_counter() - started
        assert answer.status_code == 200 and "<svg" in answer.text, answer.text[-500:]
        return seconds, len(answer.content)
    finally:
        backend.close()


def eventlog_child(folder: Path, out: Path, *args: str) -> dict[str, Any]:
    """``analyze eventlog`` in a child process: seconds, peak RSS, bytes written."""
    command = [
        sys.executable,
        "-c",
        "import sys; from imixs_archive.cli import main; sys.exit(main(sys.argv[1:]))",
        "analyze",
        "eventlog",
        str(out),
        *args,
        "--data-dir",
        str(folder),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    size = out.stat().st_size
    out.unlink()
    return {
        "s": round(seconds, 1),
        "peak RSS MB": round(max(peak, before) / 1024),
        "MB": round(size / 1e6, 1),
        "said": done.stdout.strip(),
    }


def synthetic(events: int, steps: int = 5, per_instance: int = 10) -> dict[str, float]:
    """The in-memory part of a kept map at ``events`` events of one group and year (paths
    through five steps, now and then a step back: a few hundred variants), without a
    store: twelve months' kept rows (JSON, as stored) parsed, joined into traces and
    counted. What a store of that size adds is the reads of 12 rows and the day stamps."""
    import json
    import random

    rng = random.Random(1)
    names = ["Open", "In Review", "Approved", "Completed", "Rejected"][:steps]
    months: list[str] = []
    start = dt.datetime(2025, 11, 1, tzinfo=dt.UTC)
    per_month = events // 12
    for month in range(12):
        days: dict[str, dict[str, list[int]]] = {}
        for n in range(per_month // per_instance):
            origin = f"{month:04x}{n:04x}-0000-4000-8000-{n:012x}"
            when = int((start + dt.timedelta(days=30 * month + rng.uniform(0, 25))).timestamp())
            flat: list[int] = []
            step = 0
            for _n in range(per_instance):  # forward through the steps, now and then back
                when += rng.randint(600, 200_000)
                flat += [step, when * 1000]
                step = max(0, step - 1) if rng.random() < 0.3 else (step + 1) % len(names)
            day = dt.datetime.fromtimestamp(when, dt.UTC).date().isoformat()
            days.setdefault(day, {})[origin] = flat
        months.append(json.dumps({"steps": names, "days": days, "unreadable": 0}))
    started = time.perf_counter()
    traces: dict[str, list[tuple[int, str]]] = {}
    warnings: dict[str, int] = {}
    for text in months:
        _take(json.loads(text), "0000", "9999", traces, warnings)
    joined = time.perf_counter()
    found = ProcessMap("G", dt.date(2025, 11, 1), dt.date(2026, 10, 31), "UTC")
    _figures(found, traces.items())
    done = time.perf_counter()
    assert found.events == per_month // per_instance * per_instance * 12
    return {"parse+join s": joined - started, "count s": done - joined, "total s": done - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="*", type=Path, help="scale store folders")
    parser.add_argument("--group", default="Invoice")
    parser.add_argument("--from", dest="first", default=FIRST)
    parser.add_argument("--to", dest="last", default=LAST)
    parser.add_argument("--tz", default="UTC")
    parser.add_argument("--no-eventlog", action="store_true", help="the map only")
    parser.add_argument(
        "--synthetic",
        type=int,
        metavar="EVENTS",
        help="also time the in-memory part of a kept map of EVENTS events (no store)",
    )
    args = parser.parse_args()
    if args.synthetic:
        figures = synthetic(args.synthetic)
        print(
            f"synthetic {args.synthetic:,} events: "
            + ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
        )
    first, last = dt.date.fromisoformat(args.first), dt.date.fromisoformat(args.last)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.group}, {first} to {last}, {args.tz}")
    for folder in args.stores:
        settings = load_settings({"ARCHIVE_DATA_DIR": str(folder)})
        with open_backend(settings) as backend, Archive(backend) as archive:
            dropped = drop_kept(archive, args.group, args.tz)
            cold, found = timed_map(archive, args.group, first, last, args.tz)
            warm = [timed_map(archive, args.group, first, last, args.tz)[0] for _ in range(3)]
        page, size = page_seconds(folder, args.group, args.first, args.last)
        print(
            f"{folder}: {found.instances:,} instances, {found.events:,} events, "
            f"{len(found.edges)} arrows, {len(found.variants)} variants "
            f"(dropped {dropped} kept rows first)\n"
            f"  map cold {cold:.2f} s ({found.counted}), kept {statistics.median(warm):.3f} s "
            f"(median of 3), page opened {page:.2f} s ({size / 1000:.0f} kB)"
        )
        if args.no_eventlog:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "log.xes.gz"
            ranged = ["--group", args.group, "--from", args.first, "--to", args.last]
            print(f"  eventlog group+year: {eventlog_child(folder, out, *ranged)}")
            print(f"  eventlog whole archive: {eventlog_child(folder, out)}")


if __name__ == "__main__":
    main()
