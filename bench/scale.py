"""The decade benchmark: every view a person opens, at growing archive sizes.

For each size (``--sizes``, default 10,000 and 100,000 snapshots) an embedded store of
realistic snapshots over two years (``bench/scale_data.py``: ~10 per process instance,
4-6 KB of XML, an attachment on every tenth, carried forward, mixed UTC offsets, five
workflow groups) is generated once (kept in ``--keep DIR``/scale-N, reused when there)
and finished as ``import`` finishes one (the changed days' figures counted: timed). Then:

- **CLI**: each command as a user runs it (a new process: wall time, best of 3);
- **HTTP**: ``imixs-archive serve`` on the store, each page and endpoint: the first
  request after start and the median of 5 more;
- **memory**: ``serve``'s peak RSS (VmHWM) after every page was opened.

Prints one table per kind with the time at each size and the ratio of the largest to
the smallest. Not a test: figures depend on the machine; results go to bench/README.md.

    .venv/bin/python bench/scale.py --keep /tmp                      # 1e4 and 1e5
    .venv/bin/python bench/scale.py --keep /tmp --sizes 10000,1000000
    .venv/bin/python bench/scale.py --cassandra 127.0.0.1:9042       # keyspaces scale_N

On Cassandra the store of each size is a keyspace on the node (``scale_baaaa`` for 10,000:
the digits as letters; replication 1, consistency ONE), generated once and reused.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.services.statistics import refresh_figures
from imixs_archive.storage.base import Backend
from imixs_archive.storage.factory import open_backend
from lib.serving import start_serve
from scale_data import END, generate

EXE = [sys.executable, "-m", "imixs_archive"]
MONTH = ("2026-09-01", "2026-09-30")


def store_env(folder: Path, cassandra: str | None, size: int) -> dict[str, str]:
    """The settings naming the store of one size (for commands and ``serve``)."""
    if cassandra is None:
        return {"ARCHIVE_DATA_DIR": str(folder)}
    return {
        "ARCHIVE_DATA_DIR": str(folder),
        "ARCHIVE_CLUSTER_CONTACTPOINTS": cassandra,
        "ARCHIVE_CLUSTER_KEYSPACE": keyspace_of(size),
        "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "1",
        "ARCHIVE_CLUSTER_CONSISTENCY_READ": "ONE",
        "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "ONE",
    }


def keyspace_of(size: int) -> str:
    """``scale_`` and the size's digits as letters (a keyspace name takes letters only)."""
    return "scale_" + "".join("abcdefghij"[int(digit)] for digit in str(size))


def open_store(env: dict[str, str]) -> Backend:
    settings = load_settings(env)
    return open_backend(settings)


def build(env: dict[str, str], size: int) -> dict[str, float]:
    """The store of ``size`` snapshots (generated unless there); the finishing count."""
    figures: dict[str, float] = {}
    with open_store(env) as backend, Archive(backend) as archive:
        empty = next(archive.days.with_snapshots(), None) is None
    if empty:
        started = time.perf_counter()
        with open_store(env) as backend:
            generate(backend, size, years=2.0, progress=True)
        figures["generate s"] = time.perf_counter() - started
    with open_store(env) as backend, Archive(backend) as archive:
        started = time.perf_counter()
        refresh_figures(archive)
        figures["finish import (count changed days) s"] = time.perf_counter() - started
    return figures


def samples(env: dict[str, str]) -> dict[str, str]:
    """A snapshot id, its instance and a day that has snapshots, from the middle."""
    with open_store(env) as backend, Archive(backend) as archive:
        days = list(archive.days.with_snapshots())
        day = days[len(days) // 2]
        snapshot_id = sorted(archive.days.snapshot_ids(day))[0]
    uniqueid = snapshot_id.rsplit("-", 1)[0]
    return {"id": snapshot_id, "uniqueid": uniqueid, "day": day.isoformat()}


def cli_commands(s: dict[str, str]) -> dict[str, list[str]]:
    return {
        "stats": ["stats"],
        "stats --json": ["stats", "--json"],
        "get": ["get", s["id"], "--no-files"],
        "list --uniqueid": ["list", "--uniqueid", s["uniqueid"]],
        "list one day": ["list", "--from", s["day"], "--to", s["day"]],
        "list 30 days": ["list", "--from", MONTH[0], "--to", MONTH[1]],
        "analyze aggregates (month)": [
            "analyze",
            "aggregates",
            "--from",
            MONTH[0],
            "--to",
            MONTH[1],
        ],
        "analyze leadtimes (month)": ["analyze", "leadtimes", "--from", MONTH[0], "--to", MONTH[1]],
        "analyze history": ["analyze", "history", s["uniqueid"]],
    }


def http_paths(s: dict[str, str]) -> dict[str, str]:
    month = f"from={MONTH[0]}&to={MONTH[1]}"
    return {
        "GET /api/stats": "/api/stats",
        "GET /api/stats/dashboard": "/api/stats/dashboard",
        "Monitor": "/ui/monitor",
        "Statistics (whole archive)": "/ui/stats",
        "Statistics (a month)": f"/ui/stats?{month}",
        "snapshot page": f"/ui/snapshot/{s['id']}",
        "instance history page": f"/ui/history/{s['uniqueid']}",
        "Inspect (one instance)": f"/ui/inspect?uniqueid={s['uniqueid']}",
        "API instance listing": f"/api/archive/instances/{s['uniqueid']}/snapshots",
        "API snapshots of a day": f"/api/archive/snapshots?from={s['day']}&to={s['day']}",
        "API aggregates (month)": f"/api/analytics/aggregates?{month}",
        "API leadtimes (month)": f"/api/analytics/leadtimes?{month}",
        "API history": f"/api/analytics/history/{s['uniqueid']}",
    }


def best_of(runs: int, action: Callable[[], None]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def time_cli(store: dict[str, str], commands: dict[str, list[str]]) -> dict[str, float]:
    env = {**os.environ, **store}
    out: dict[str, float] = {}
    for name, args in commands.items():

        def run(args: list[str] = args) -> None:
            subprocess.run([*EXE, *args], env=env, check=True, capture_output=True)

        out[name] = best_of(3, run)
    return out


def time_http(
    store: dict[str, str], paths: dict[str, str]
) -> tuple[dict[str, float], dict[str, float], float]:
    process, url = start_serve({**store, "ARCHIVE_ACCESS_LOG": "false"})
    first: dict[str, float] = {}
    warm: dict[str, float] = {}
    try:
        with httpx.Client(base_url=url, timeout=600) as client:
            for name, path in paths.items():
                started = time.perf_counter()
                response = client.get(path)
                first[name] = time.perf_counter() - started
                if response.status_code != 200:
                    raise SystemExit(f"{path}: {response.status_code} {response.text[:200]}")
                times = []
                for _ in range(5):
                    started = time.perf_counter()
                    client.get(path)
                    times.append(time.perf_counter() - started)
                warm[name] = statistics.median(times)
        peak = _peak_rss(process.pid)
    finally:
        process.terminate()
        process.wait(120)  # its background counts finish first
    return first, warm, peak


def _peak_rss(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def table(title: str, sizes: list[int], rows: dict[str, dict[int, float]], unit: str) -> None:
    print(f"\n{title}")
    head = " | ".join(f"{size:,}" for size in sizes)
    print(f"| {'':40} | {head} | ratio |")
    print(f"|{'-' * 42}|" + "|".join("-" * (len(f"{s:,}") + 2) for s in sizes) + "|-------|")
    for name, by_size in rows.items():
        cells = " | ".join(f"{by_size.get(size, float('nan')):.3f}{unit}" for size in sizes)
        ratio = by_size[sizes[-1]] / by_size[sizes[0]] if by_size.get(sizes[0]) else float("nan")
        print(f"| {name:40} | {cells} | {ratio:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--keep", type=Path, default=Path("/tmp"), help="where the stores live")
    parser.add_argument("--no-cli", action="store_true")
    parser.add_argument("--cassandra", help="host:port of a Cassandra node (else SQLite)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    build_rows: dict[str, dict[int, float]] = {}
    cli_rows: dict[str, dict[int, float]] = {}
    first_rows: dict[str, dict[int, float]] = {}
    warm_rows: dict[str, dict[int, float]] = {}
    memory: dict[str, dict[int, float]] = {"serve peak RSS after every page": {}}
    for size in sizes:
        folder = args.keep / (f"scale-{size}" if args.cassandra is None else f"scale-c{size}")
        folder.mkdir(parents=True, exist_ok=True)
        env = store_env(folder, args.cassandra, size)
        where = env.get("ARCHIVE_CLUSTER_KEYSPACE", str(folder))
        print(f"{size:,} snapshots in {where} (data up to {END:%Y-%m-%d})", file=sys.stderr)
        for name, value in build(env, size).items():
            build_rows.setdefault(name, {})[size] = value
        s = samples(env)
        if not args.no_cli:
            for name, value in time_cli(env, cli_commands(s)).items():
                cli_rows.setdefault(name, {})[size] = value
        first, warm, peak = time_http(env, http_paths(s))
        for name, value in first.items():
            first_rows.setdefault(name, {})[size] = value
        for name, value in warm.items():
            warm_rows.setdefault(name, {})[size] = value
        memory["serve peak RSS after every page"][size] = peak
    table("Finishing an archive (s)", sizes, build_rows, "")
    if cli_rows:
        table("CLI, a new process each, best of 3 (s)", sizes, cli_rows, "")
    table("HTTP, first request after start (s)", sizes, first_rows, "")
    table("HTTP, median of 5 more (s)", sizes, warm_rows, "")
    table("Memory (MB)", sizes, memory, "")
    print(
        f"\npython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
