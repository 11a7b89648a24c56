"""Tune the SQLite backend: page size, journal mode, synchronous, transaction size.

Workload per case, on a fresh store, through ``SQLiteBackend`` itself:

* ``blobs``: ``--mib`` rows of 1 MiB of random bytes into ``documents_data`` in one lazy
  ``put`` (the backend commits every ``commit_bytes``);
* ``rows``: ``--rows`` small ``documents`` rows in one put;
* ``puts``: ``--puts`` puts of 3 small rows each (one archived snapshot's index rows:
  one transaction, so one commit, each);
* ``read``: a scan of every blob back (from the page cache: a CPU and page-layout cost).

Every case runs once per round, ``--repeat`` rounds (so drift of the machine hits every
case alike); the median is reported. The raw disk rate - the same bytes written in 1 MiB
writes and fsynced once, and fsynced every 32 MiB - is measured in the same run as the
yardstick. One factor is varied at a time around the defaults of
``Tuning``. ``--rowid`` also compares ``WITHOUT ROWID`` with a rowid table for small rows.

    .venv/bin/python bench/sqlite_tuning.py [--mib 300] [--rows 50000] [--puts 1000]
                                            [--repeat 5] [--rowid] [--dir PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from imixs_archive.storage.base import Row
from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA, SNAPSHOTS_BY_UNIQUEID
from imixs_archive.storage.sqlite import engine
from imixs_archive.storage.sqlite import statements as sql
from imixs_archive.storage.sqlite.backend import SQLiteBackend, Tuning

MiB = 1024 * 1024


@functools.cache
def _pool() -> list[bytes]:
    """A few random (incompressible) pieces, reused: SQLite does not deduplicate."""
    return [os.urandom(MiB) for _ in range(8)]


def _pieces(count: int) -> Iterator[Row]:
    pool = _pool()
    for i in range(count):
        yield {"data_id": f"{i:064x}", "data": pool[i % len(pool)]}


def _small_rows(count: int) -> Iterator[Row]:
    for i in range(count):
        yield {"md5": f"{i // 50:032X}", "sort_id": i % 50, "data_id": f"{i:064x}"}


def _snapshot_rows(i: int) -> list[Row]:
    return [{"uniqueid": f"{i:08x}-0000", "snapshot": f"{i:08x}-0000-{j:013d}"} for j in range(3)]


def _timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run_case(tuning: Tuning, where: Path, args: argparse.Namespace) -> dict[str, float]:
    """One run of the workload on a fresh store; rates in MiB/s, rows/s, puts/s."""
    store = where / "store"
    shutil.rmtree(store, ignore_errors=True)
    with SQLiteBackend(store, tuning) as backend:
        blobs = _timed(lambda: backend.put(DOCUMENTS_DATA, _pieces(args.mib)))
        rows = _timed(lambda: backend.put(DOCUMENTS, _small_rows(args.rows)))

        def puts() -> None:
            for i in range(args.puts):
                backend.put(SNAPSHOTS_BY_UNIQUEID, _snapshot_rows(i))

        put_time = _timed(puts)
        read = _timed(lambda: sum(len(r["data"]) for r in backend.scan(DOCUMENTS_DATA)))
    size = (store / "archive.db").stat().st_size  # closed: the WAL is checkpointed and gone
    shutil.rmtree(store)
    return {
        "blobs": args.mib / blobs,
        "rows": args.rows / rows,
        "puts": args.puts / put_time,
        "read": args.mib / read,
        "size": size / MiB,
    }


def raw_disk(where: Path, mib: int, sync_every: int | None) -> float:
    """MiB/s of writing ``mib`` MiB in 1 MiB writes, fsynced every ``sync_every`` MiB
    (None: once at the end)."""
    path = where / "raw.bin"
    started = time.perf_counter()
    with path.open("wb") as file:
        for i in range(mib):
            file.write(_pool()[i % len(_pool())])
            if sync_every and (i + 1) % sync_every == 0:
                file.flush()
                os.fsync(file.fileno())
        file.flush()
        os.fsync(file.fileno())
    elapsed = time.perf_counter() - started
    path.unlink()
    return mib / elapsed


def cases() -> list[tuple[str, Tuning]]:
    """The defaults, then one factor varied at a time."""
    base = Tuning()
    varied: list[tuple[str, Tuning]] = [("defaults", base)]
    for page_size in (4096, 16384, 32768, 65536):
        if page_size != base.page_size:
            varied.append(
                (f"page_size={page_size}", dataclasses.replace(base, page_size=page_size))
            )
    for mode in ("WAL", "DELETE"):
        if mode != base.journal_mode:
            varied.append((f"journal_mode={mode}", dataclasses.replace(base, journal_mode=mode)))
    for sync in ("NORMAL", "FULL"):
        if sync != base.synchronous:
            varied.append((f"synchronous={sync}", dataclasses.replace(base, synchronous=sync)))
    for commit in (1, 8, 32, 128):
        if commit * MiB != base.commit_bytes:
            tuned = dataclasses.replace(base, commit_bytes=commit * MiB)
            varied.append((f"commit_bytes={commit} MiB", tuned))
    return varied


def rowid_comparison(where: Path, count: int) -> list[tuple[str, float, float, float]]:
    """Small rows of ``documents`` with and without ROWID: insert and scan rate, size."""
    results = []
    for label, ddl in (
        ("WITHOUT ROWID", sql.create_table(DOCUMENTS)),
        ("rowid", sql.create_table(DOCUMENTS).removesuffix(" WITHOUT ROWID")),
    ):
        path = where / "rowid.db"
        path.unlink(missing_ok=True)
        connection = engine.connect(path, busy_timeout=60, create=True)
        connection.execute(f"PRAGMA page_size = {Tuning().page_size}")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(ddl)
        values = [tuple(r.values()) for r in _small_rows(count)]
        started = time.perf_counter()
        connection.execute("BEGIN")
        connection.executemany(sql.upsert(DOCUMENTS), values)
        connection.execute("COMMIT")
        insert = time.perf_counter() - started
        started = time.perf_counter()
        connection.execute('SELECT * FROM "documents" ORDER BY "md5", "sort_id"').fetchall()
        scan = time.perf_counter() - started
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
        results.append((label, count / insert, count / scan, path.stat().st_size / MiB))
        path.unlink()
    return results


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--mib", type=int, default=300, help="MiB of 1 MiB blobs per case")
    parser.add_argument("--rows", type=int, default=50_000, help="small rows in one put")
    parser.add_argument("--puts", type=int, default=1000, help="small puts (3 rows each)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per case (median is kept)")
    parser.add_argument("--rowid", action="store_true", help="also compare WITHOUT ROWID")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (same disk)")
    args = parser.parse_args()
    where = Path(tempfile.mkdtemp(prefix="sqlite-tuning-", dir=args.dir))
    try:
        print(f"SQLite {engine.version()}, {args.mib} MiB of 1 MiB blobs, in {where}")
        once = statistics.median(raw_disk(where, args.mib, None) for _ in range(args.repeat))
        every = statistics.median(raw_disk(where, args.mib, 32) for _ in range(args.repeat))
        print(f"raw disk: {once:.0f} MiB/s (one fsync), {every:.0f} MiB/s (fsync per 32 MiB)")
        print()
        print("| case | blobs MiB/s | % of raw | rows/s | puts/s | read MiB/s | size MiB |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in cases()}
        for _ in range(args.repeat):
            for name, tuning in cases():
                runs[name].append(run_case(tuning, where, args))
        for name, results in runs.items():
            r = _median(results)
            print(
                f"| {name} | {r['blobs']:.0f} | {100 * r['blobs'] / once:.0f} |"
                f" {r['rows']:,.0f} | {r['puts']:,.0f} | {r['read']:.0f} | {r['size']:.0f} |"
            )
        if args.rowid:
            print()
            print("| documents table | insert rows/s | scan rows/s | size MiB |")
            print("|---|---:|---:|---:|")
            for label, insert, scan, size in rowid_comparison(where, args.rows * 4):
                print(f"| {label} | {insert:,.0f} | {scan:,.0f} | {size:.1f} |")
    finally:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
