"""Benchmark: the same workload into a real Cassandra node and into the embedded store.

In one run, on the workload of ``bench/store_ingest.py`` (process instances with
attachments carried from snapshot to snapshot) and the small snapshots of
``bench/sync_throughput.py``:

* ingest: the XML files imported into a fresh SQLite store and into a fresh keyspace;
* read-back: every snapshot loaded with its files and written out as XML again;
* sync: small snapshots pulled from the workflow double (a child process) into each;

with MB/s, snapshots/s, this process's CPU per MB, and the node's heap after each phase
(``jcmd GC.heap_info`` on the node's PID). Needs a node: ``scripts/cassandra-node start``.

    .venv/bin/python bench/cassandra_node.py                    # the recorded run
    .venv/bin/python bench/cassandra_node.py --instances 8 --small 300
    .venv/bin/python bench/cassandra_node.py --instances 4 --small 200 --requests

``--requests``: also the store operations each phase made, per MB (ingest, read-back) or
per snapshot (sync), by kind and table (a row written, a row read, a scan started); on
Cassandra each is at least one request to the node.

Not a test: figures depend on the machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from imixs_archive.archive.snapshots import Archive  # noqa: E402
from imixs_archive.config import load_settings  # noqa: E402
from imixs_archive.document.xml_writer import iter_xml  # noqa: E402
from imixs_archive.services.importer import import_sources  # noqa: E402
from imixs_archive.services.sources import find_sources  # noqa: E402
from imixs_archive.storage.base import Backend  # noqa: E402
from imixs_archive.storage.cassandra.backend import CassandraBackend  # noqa: E402
from imixs_archive.storage.delegating import DelegatingBackend  # noqa: E402
from imixs_archive.storage.model import Table  # noqa: E402
from imixs_archive.storage.sqlite.backend import SQLiteBackend  # noqa: E402
from imixs_archive.sync.service import SyncConfig, SyncService  # noqa: E402
from imixs_archive.workflow.client import WorkflowClient  # noqa: E402
from store_ingest import generate  # noqa: E402
from sync_throughput import _serve  # noqa: E402

MB = 1024 * 1024
NODE_PID = Path.home() / ".cache/imixs-archive/cassandra-node/nodes/node1/pid"
JCMD = "/usr/lib/jvm/java-17-openjdk-amd64/bin/jcmd"


def node_heap_mb() -> str:
    """Used / committed heap of the node, from jcmd (or '?' when it cannot be read)."""
    try:
        pid = NODE_PID.read_text().strip()
        out = subprocess.run(
            [JCMD, pid, "GC.heap_info"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    match = re.search(r"total (\d+)K, used (\d+)K", out)
    if not match:
        return "?"
    return f"{int(match.group(2)) // 1024} of {int(match.group(1)) // 1024} MB"


class Counted(DelegatingBackend):
    """Counts the store operations: rows written, rows read by key, scans started."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.counts: Counter[str] = Counter()

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        written = self.inner.put(table, rows)
        self.counts[f"put {table.name}"] += written
        return written

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Any:
        self.counts[f"get {table.name}"] += 1
        return self.inner.get(table, key, columns)

    def scan(self, table: Table, partition: Any = None, **options: Any) -> Iterator[Any]:
        self.counts[f"scan {table.name}"] += 1
        return self.inner.scan(table, partition, **options)

    def delete(self, table: Table, key: Mapping[str, Any], **options: Any) -> None:
        self.counts[f"delete {table.name}"] += 1
        self.inner.delete(table, key, **options)

    def report(self, label: str, per: float, unit: str) -> None:
        total = sum(self.counts.values()) / per
        parts = ", ".join(f"{name} {n / per:.2f}" for name, n in self.counts.most_common(8))
        print(f"  {label}: {total:.1f} store operations per {unit} ({parts})")
        self.counts.clear()


def cassandra_store(target: str, keyspace: str) -> CassandraBackend:
    """One node: one copy at ONE. Several contact points: three copies at LOCAL_QUORUM."""
    several = "," in target
    settings = load_settings(
        {
            "ARCHIVE_CLUSTER_CONTACTPOINTS": target,
            "ARCHIVE_CLUSTER_KEYSPACE": keyspace,
            "ARCHIVE_CLUSTER_REPLICATION_CLASS": (
                "NetworkTopologyStrategy" if several else "SimpleStrategy"
            ),
            "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "datacenter1:3" if several else "1",
            "ARCHIVE_CLUSTER_CONSISTENCY_READ": "LOCAL_QUORUM" if several else "ONE",
            "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "LOCAL_QUORUM" if several else "ONE",
        }
    )
    return CassandraBackend.from_settings(settings)


@contextmanager
def measured() -> Iterator[dict[str, float]]:
    figures: dict[str, float] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    yield figures
    figures["seconds"] = time.perf_counter() - wall
    figures["cpu"] = time.process_time() - cpu


def ingest_and_read(
    backend: Backend, inputs: Path, xml_bytes: int, count: bool = False
) -> dict[str, Any]:
    sources = find_sources([str(inputs)])
    counted = Counted(backend) if count else None
    with Archive(counted or backend) as archive:
        with measured() as ingest:
            summary = import_sources(archive, sources)
        if counted:
            counted.report(f"{backend.name} ingest", xml_bytes / MB, "MB")
        with measured() as read:
            read_bytes = 0
            for snapshot_id in list(archive.index.iter_snapshot_ids()):
                for piece in iter_xml(archive.load(snapshot_id)):
                    read_bytes += len(piece)
        if counted:
            counted.report(f"{backend.name} read-back", read_bytes / MB, "MB")
    return {
        "snapshots": summary.new,
        "ingest_mb_s": xml_bytes / MB / ingest["seconds"],
        "ingest_snap_s": summary.new / ingest["seconds"],
        "ingest_cpu_ms_per_mb": 1000 * ingest["cpu"] / (xml_bytes / MB),
        "read_mb_s": read_bytes / MB / read["seconds"],
        "read_cpu_ms_per_mb": 1000 * read["cpu"] / (read_bytes / MB),
    }


def sync_small(
    open_store: Callable[[], Backend], count: int, workers: int, counting: bool = False
) -> dict[str, float]:
    parent, child = multiprocessing.Pipe()
    spec = {"seed": 1, "count": count, "meta": 4000, "file_bytes": 0}
    process = multiprocessing.get_context("fork").Process(target=_serve, args=(child, spec))
    process.start()
    url = parent.recv()
    try:
        with (
            open_store() as store,
            WorkflowClient(url, max_connections=workers + 2) as client,
        ):
            backend = Counted(store) if counting else store
            with Archive(backend) as archive:
                config = SyncConfig(interval_ms=10, initial_delay_ms=0, workers=workers, batch=200)
                service = SyncService(archive, client, config)
                with measured() as sync:
                    while service.run_round().read:
                        pass
                service.close()
                archived = service.counters.archived
            if isinstance(backend, Counted):
                backend.report(f"{store.name} sync", count, "snapshot")
    finally:
        parent.send("stop")
        parent.recv()
        process.join()
    assert archived == count, (archived, count)
    return {"snap_s": count / sync["seconds"], "cpu_ms_per_snap": 1000 * sync["cpu"] / count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default=os.environ.get("ARCHIVE_TEST_CASSANDRA", "127.0.0.1"))
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--small", type=int, default=1000, help="small snapshots to sync")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument(
        "--cluster", default="", help="also a three-node cluster: its contact points, comma list"
    )
    parser.add_argument("--requests", action="store_true", help="count the store operations")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cassandra-bench-", dir=args.dir))
    keyspace = "bench_" + "".join(random.choices("abcdefghij", k=8))
    try:
        inputs = work / "in"
        inputs.mkdir()
        xml_bytes = generate(inputs, args.instances, args.steps, seed=1)["xml_bytes"]
        print(f"workload: {xml_bytes / MB:.0f} MB of snapshot XML; node heap {node_heap_mb()}")
        results = {}
        with SQLiteBackend(work / "store") as sqlite:
            results["embedded"] = ingest_and_read(sqlite, inputs, xml_bytes, args.requests)
        targets = {"cassandra": args.target, **({"cluster3": args.cluster} if args.cluster else {})}
        for name, target in targets.items():
            cassandra = cassandra_store(target, keyspace)
            try:
                results[name] = ingest_and_read(cassandra, inputs, xml_bytes, args.requests)
            finally:
                cassandra.close()
        print(f"node heap after ingest and read-back: {node_heap_mb()}")
        for name, r in results.items():
            print(
                f"{name:9} ingest {r['ingest_mb_s']:6.1f} MB/s {r['ingest_snap_s']:5.1f} snap/s "
                f"({r['ingest_cpu_ms_per_mb']:.1f} ms CPU/MB); read-back {r['read_mb_s']:6.1f} "
                f"MB/s ({r['read_cpu_ms_per_mb']:.1f} ms CPU/MB)"
            )
        ratio = results["cassandra"]["ingest_mb_s"] / results["embedded"]["ingest_mb_s"]
        print(f"ingest cassandra/embedded: {ratio:.2f} (target >= 0.5)")
        sync_embedded = sync_small(
            lambda: SQLiteBackend(work / "sync-store"), args.small, args.workers, args.requests
        )
        synced = {"embedded": sync_embedded}
        for name, target in targets.items():
            synced[name] = sync_small(
                partial(cassandra_store, target, keyspace + "_sync"),
                args.small,
                args.workers,
                args.requests,
            )
        for name, s in synced.items():
            print(
                f"{name:9} sync of {args.small} small snapshots: {s['snap_s']:.0f}/s "
                f"({s['cpu_ms_per_snap']:.2f} ms CPU each)"
            )
        print(f"node heap at the end: {node_heap_mb()}")
    finally:
        for target in filter(None, (args.target, args.cluster)):
            for name in (keyspace, keyspace + "_sync"):
                try:
                    store = cassandra_store(target, name)
                    store.drop_keyspace()
                    store.close()
                except Exception as exc:
                    print(f"could not drop {name} at {target}: {exc}", file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
