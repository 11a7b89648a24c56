"""Benchmark of the sync: snapshots pulled from the workflow double over loopback HTTP.

The double (tests/support/workflow_double.py) runs in a child process, so it does not
share the interpreter lock with the sync. Two workloads, each synced into a fresh
embedded (SQLite) store by ``SyncService`` rounds until the event log is empty:

* small: snapshots of ~4 KB metadata without attachments (and a run with one 2 KB file);
* large: snapshots with one incompressible attachment of ``--large-mb`` MB each.

Baseline, in the same run: the embedded store's own ingest (``Archive.ingest``) of the
very XML files the double serves, read from disk into a fresh store in the same folder.

The completeness path (claims written before each lock, and the catch-up over
``/snapshot/syncpoint``) is on as in production, and a run ends only when the catch-up has
confirmed every snapshot too (it walks the rest once the events are done). During the run
the catch-up trails by ``--catchup-lag`` ms (default 1000: it re-checks snapshots the
events archived, its steady state; 0: it races the events and archives them itself,
one request at a time); ``--no-catchup`` measures without it. ``--idle S`` then measures
the CPU an idle sync loop costs over S seconds (interval 5 s, the default), catch-up
included. Besides the rate, the sync process's CPU per snapshot is printed: on a shared
machine it moves less than the wall-clock rate.

    .venv/bin/python bench/sync_throughput.py                     # the recorded run
    .venv/bin/python bench/sync_throughput.py --dir /dev/shm      # store on tmpfs
    .venv/bin/python bench/sync_throughput.py --small 300 --large 2 --large-mb 8
    .venv/bin/python bench/sync_throughput.py --large 0 --catchup-lag 0 --idle 60

Not a test: figures depend on the machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.connection
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.sync.service import SyncConfig, SyncService
from imixs_archive.workflow.client import WorkflowClient
from support.workflow_double import WorkflowDouble

MB = 1024 * 1024
WORDS = ["invoice", "approved", "pending", "customer", "order", "amount", "review", "archive"]


def _metadata(rng: random.Random, size: int) -> dict[str, Any]:
    items: dict[str, Any] = {}
    while sum(len(str(v)) for v in items.values()) < size:
        items[f"txt{len(items)}"] = " ".join(rng.choice(WORDS) for _ in range(30))
    return items


def _serve(conn: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
    """Child process: build the double's content, dump the XML files, serve until told."""
    rng = random.Random(spec["seed"])
    double = WorkflowDouble()
    meta = _metadata(rng, spec["meta"])
    for n in range(spec["count"]):
        files = {"doc.bin": rng.randbytes(spec["file_bytes"])} if spec["file_bytes"] else None
        double.save(files=files, subject=f"case {n}", **meta)
    if spec.get("dump"):
        folder = Path(spec["dump"])
        for index, xml in enumerate(double._xml.values()):
            (folder / f"{index:05d}.xml").write_bytes(xml)
    double.start()
    started = time.process_time()
    conn.send(double.url)
    conn.recv()
    conn.send(time.process_time() - started)
    double.stop()


OPTIONS: dict[str, Any] = {}
"""Settings of the sync processes (set from the command line before any is forked)."""


def _config(workers: int, **extra: Any) -> SyncConfig:
    catchup = {
        "catchup": not OPTIONS.get("no_catchup", False),
        "catchup_from": 0,
        "catchup_lag_ms": OPTIONS.get("catchup_lag", SyncConfig.catchup_lag_ms),
    }
    return SyncConfig(
        **{"interval_ms": 10, "initial_delay_ms": 0, "workers": workers, "batch": 200}
        | catchup
        | extra
    )


def _drain(url: str, store: Path, workers: int) -> tuple[int, int, float, float]:
    """One sync process: its loop until the event log is empty and no claim is left,
    then the catch-up to the last snapshot; (snapshots in the store, bytes, CPU s, the
    monotonic time the work ended)."""
    with (
        SQLiteBackend(store) as backend,
        Archive(backend) as archive,
        WorkflowClient(url, max_connections=workers + 2) as client,
    ):
        service = SyncService(archive, client, _config(workers))
        cpu = time.process_time()
        thread = service.start()  # the production loop: rounds, and the catch-up beside
        while client.read_events(max_count=1) or next(service.claims.all(), None) is not None:
            time.sleep(0.1)  # each look is a request: at 50 a second they took a fifth of the CPU
        service.stop()
        thread.join()
        service.stopping.clear()
        if service.config.catchup:
            # Done only once the catch-up has confirmed every snapshot of the run too.
            service.catchup.lag_ms = 0
            while service.catchup.run(10.0).more:
                pass
        result = (
            sum(1 for _ in archive.index.iter_snapshot_ids()),  # whoever archived it
            service.counters.bytes,
            time.process_time() - cpu,
            time.monotonic(),  # the work ends here: the idle loop is not timed with it
        )
        idle = OPTIONS.get("idle", 0.0)
        if idle:
            service.config = _config(workers, interval_ms=5000)
            service._walker = None
            started = time.process_time()
            thread = service.start()
            time.sleep(idle)
            service.stop()
            thread.join()
            print(
                f"  idle sync loop over {idle:.0f} s (interval 5 s, catch-up at the head): "
                f"{(time.process_time() - started) / idle:.2%} of a core"
            )
        service.close()
        return result


def _drain_child(
    conn: multiprocessing.connection.Connection, url: str, store: Path, workers: int
) -> None:
    conn.send(_drain(url, store, workers))


def _sync(spec: dict[str, Any], store: Path, workers: int, processes: int = 1) -> dict[str, float]:
    parent, child = multiprocessing.Pipe()
    fork = multiprocessing.get_context("fork")
    process = fork.Process(target=_serve, args=(child, spec))
    process.start()
    url = parent.recv()
    SQLiteBackend(store).close()  # create the store once, before the processes race
    try:
        others = []
        for _ in range(processes - 1):
            mine, theirs = multiprocessing.Pipe()
            other = fork.Process(target=_drain_child, args=(theirs, url, store, workers))
            others.append((other, mine))
        started = time.monotonic()
        for other, _pipe in others:
            other.start()
        archived, size, cpu, ended = _drain(url, store, workers)
        for other, pipe in others:
            more = pipe.recv()
            other.join()
            archived, size, cpu = max(archived, more[0]), size + more[1], cpu + more[2]
            ended = max(ended, more[3])
        elapsed = ended - started
        assert archived == spec["count"], (archived, spec["count"])
    finally:
        parent.send("stop")
        double_cpu = parent.recv()
        process.join()
    return {
        "seconds": elapsed,
        "per_second": archived / elapsed,
        "mb_per_second": size / MB / elapsed,
        "bytes": size,
        "double_cpu": double_cpu / elapsed,
        "sync_cpu": cpu / elapsed,
    }


def _ingest(folder: Path, store: Path) -> dict[str, float]:
    files = sorted(folder.glob("*.xml"))
    total = sum(f.stat().st_size for f in files)
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        started = time.perf_counter()
        for path in files:
            with path.open("rb") as stream:
                for outcome in archive.ingest(stream, name=str(path)):
                    assert not isinstance(outcome, tuple), outcome
        elapsed = time.perf_counter() - started
    return {"seconds": elapsed, "mb_per_second": total / MB / elapsed, "bytes": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=2000, help="small snapshots")
    parser.add_argument("--large", type=int, default=8, help="large snapshots")
    parser.add_argument("--large-mb", type=int, default=32, help="MB of each large attachment")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--processes", type=int, default=1, help="sync processes at once")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go")
    parser.add_argument("--catchup-lag", type=int, default=1000, help="ms the catch-up trails")
    parser.add_argument("--no-catchup", action="store_true", help="without the catch-up")
    parser.add_argument("--idle", type=float, default=0.0, help="then idle this many s")
    args = parser.parse_args()
    OPTIONS.update(no_catchup=args.no_catchup, idle=args.idle, catchup_lag=args.catchup_lag)
    root = Path(tempfile.mkdtemp(prefix="sync-bench-", dir=args.dir))
    print(f"stores in {root}; workers {args.workers}, sync processes {args.processes}")
    try:
        small = {"seed": 1, "count": args.small, "meta": 4000, "file_bytes": 0}
        for label, spec in (("no file", small), ("2 KB file", {**small, "file_bytes": 2048})):
            OPTIONS["idle"] = args.idle if label == "no file" else 0.0
            folder = root / f"xml-{spec['file_bytes']}"
            folder.mkdir()
            synced = _sync(
                {**spec, "dump": str(folder)}, root / f"s-{label}", args.workers, args.processes
            )
            ingested = _ingest(folder, root / f"i-{label}")
            own = spec["count"] / ingested["seconds"]
            count = max(spec["count"], 1)
            print(
                f"small, {label}: sync {synced['per_second']:.0f} snapshots/s; "
                f"store's own ingest of the same files {own:.0f}/s "
                f"(CPU: sync {synced['sync_cpu']:.0%}, double {synced['double_cpu']:.0%}; "
                f"sync {synced['sync_cpu'] * synced['seconds'] / count * 1000:.2f} ms "
                "CPU per snapshot)"
            )
        if args.large > 0:
            dump = root / "xml"
            dump.mkdir()
            large = {"seed": 3, "count": args.large, "meta": 4000, "file_bytes": args.large_mb * MB}
            synced = _sync(
                {**large, "dump": str(dump)}, root / "large", args.workers, args.processes
            )
            ingested = _ingest(dump, root / "ingest")
            ratio = synced["mb_per_second"] / max(ingested["mb_per_second"], 1e-9)
            cpu_per_mb = synced["sync_cpu"] * synced["seconds"] / max(synced["bytes"] / MB, 1e-9)
            print(
                f"large ({args.large} x {args.large_mb} MB): "
                f"sync {synced['mb_per_second']:.1f} MB/s of XML, "
                f"store's own ingest of the same files {ingested['mb_per_second']:.1f} MB/s "
                f"({ratio:.0%}; CPU: sync {synced['sync_cpu']:.0%}, "
                f"double {synced['double_cpu']:.0%}; sync {cpu_per_mb * 1000:.1f} ms CPU per MB)"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
