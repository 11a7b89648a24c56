"""Benchmark: what the archive's work costs the client and a local Cassandra node, part by
part; the figures behind "the CPU budget of 0.8x" in bench/README.md.

    .venv/bin/python bench/node_costs.py hashing     # the per-byte work of an import
    .venv/bin/python bench/node_costs.py requests    # one small request, bare driver
    .venv/bin/python bench/node_costs.py batch       # three rows: three requests or a batch
    .venv/bin/python bench/node_costs.py schema      # a new keyspace's tables
    .venv/bin/python bench/node_costs.py import --workload small           # import_sources
    .venv/bin/python bench/node_costs.py import --workload small --threads 4
    .venv/bin/python bench/node_costs.py import --pieces-compression lz4

Each measurement waits until the node has been idle for a second first. The node's CPU is
read from ``/proc`` (``lib/node_cpu.py``); for ``import`` also after a ``nodetool flush``
of the keyspace, so that the memtables' flush is counted where it would otherwise fall
outside the timed part. ``import --threads N`` imports N files at once, each with its own
``_StoreBehind`` (the variant left out: snapshots stored at once); ``--pieces-compression
lz4`` alters the pieces' table before the import (the archive creates it with zstd).
Needs a node (``scripts/cassandra-node start``) for all but ``hashing``. Not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cassandra_ingest import _settings
from lib.node_cpu import node_cpu

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024


def quiet() -> None:
    """Until the node spent less than 50 ms of CPU in a second (30 s at most)."""
    for _ in range(30):
        before = node_cpu()
        time.sleep(1.0)
        if node_cpu() - before < 0.05:
            return


def measured(work: Callable[[], Any]) -> tuple[float, float, float]:
    """Wall, client CPU and node CPU seconds of ``work``, after the node is quiet."""
    quiet()
    node, cpu, wall = node_cpu(), time.process_time(), time.perf_counter()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu, node_cpu() - node


def _keyspace(prefix: str) -> str:
    return prefix + "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10))


def _session(host: str) -> tuple[Any, Any]:
    from cassandra.cluster import Cluster

    from imixs_archive.storage.cassandra.session import QueueingConnection

    cluster = Cluster([host], protocol_version=4, connection_class=QueueingConnection)
    session = cluster.connect()
    session.default_timeout = 120
    return cluster, session


@contextmanager
def _scratch(host: str) -> Iterator[tuple[Any, str]]:
    """A session and a keyspace of its own, one copy; both gone afterwards."""
    cluster, session = _session(host)
    keyspace = _keyspace("costs_")
    replication = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    session.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {replication}")
    try:
        yield session, keyspace
    finally:
        session.execute(f"DROP KEYSPACE {keyspace}")
        cluster.shutdown()


def hashing(_args: argparse.Namespace) -> None:
    import pybase64
    from pyfastcdc.cy import FastCDC

    data = os.urandom(64 * MB)
    text = pybase64.b64encode(data)
    work = {
        "MD5": lambda: hashlib.md5(data).digest(),
        "SHA-256": lambda: hashlib.sha256(data).digest(),
        "base64 decode": lambda: pybase64.b64decode(text),
        "FastCDC cuts": lambda: sum(1 for _ in FastCDC(avg_size=128 * 1024).cut_buf(data)),
    }
    for name, run in work.items():
        started = time.process_time()
        run()
        print(f"{name}: {1000 * (time.process_time() - started) / 64:.2f} ms of CPU per MB")


def requests(args: argparse.Namespace) -> None:
    from cassandra.concurrent import execute_concurrent_with_args

    with _scratch(args.host) as (session, keyspace):
        session.execute(f"CREATE TABLE {keyspace}.t (id text PRIMARY KEY, data blob)")
        insert = session.prepare(f"INSERT INTO {keyspace}.t (id, data) VALUES (?, ?)")
        select = session.prepare(f"SELECT id FROM {keyspace}.t WHERE id = ?")
        n = args.count
        kinds = {
            "a 100-byte write": (insert, [(f"k{i}", os.urandom(100)) for i in range(n)]),
            "a read that finds nothing": (select, [(f"x{i}",) for i in range(n)]),
            "a read that finds its row": (select, [(f"k{i}",) for i in range(n)]),
        }
        for in_flight in (8, 1):
            for name, (statement, params) in kinds.items():

                def run(
                    statement: Any = statement, params: Any = params, in_flight: int = in_flight
                ) -> None:
                    if in_flight == 1:
                        for one in params:
                            session.execute(statement, one)
                    else:
                        execute_concurrent_with_args(
                            session, statement, params, concurrency=in_flight
                        )

                wall, cpu, node = measured(run)
                print(
                    f"{in_flight} in flight, {name}: {1e6 * wall / n:.0f} µs wall, "
                    f"node {1e6 * node / n:.0f} µs, client {1e6 * cpu / n:.0f} µs of CPU each"
                )


def batch(args: argparse.Namespace) -> None:
    from cassandra.query import BatchStatement, BatchType

    with _scratch(args.host) as (session, keyspace):
        inserts = {}
        for t in "abc":
            session.execute(
                f"CREATE TABLE {keyspace}.{t} (id text, snap text, v blob, PRIMARY KEY (id, snap))"
            )
            inserts[t] = session.prepare(
                f"INSERT INTO {keyspace}.{t} (id, snap, v) VALUES (?, ?, ?) USING TIMESTAMP ?"
            )
        n = args.count
        for rnd in range(2):
            for mode in ("three requests in flight", "one unlogged batch"):

                def run(mode: str = mode, rnd: int = rnd) -> None:
                    for i in range(n):
                        stamp = int(time.time() * 1e6)
                        rows = {
                            t: (f"{rnd}{mode}{i}{t}", f"s{i}", os.urandom(60), stamp) for t in "abc"
                        }
                        if mode.startswith("three"):
                            started = [session.execute_async(inserts[t], rows[t]) for t in "abc"]
                            for future in started:
                                future.result()
                        else:
                            group = BatchStatement(BatchType.UNLOGGED)
                            for t in "abc":
                                group.add(inserts[t], rows[t])
                            session.execute(group)

                wall, cpu, node = measured(run)
                print(
                    f"{mode}: {1e6 * wall / n:.0f} µs wall, node {1e6 * node / n:.0f} µs, "
                    f"client {1e6 * cpu / n:.0f} µs of CPU per group of three rows"
                )


def schema(args: argparse.Namespace) -> None:
    from imixs_archive.storage.cassandra.backend import CassandraBackend

    for _ in range(args.rounds):
        opened: list[Any] = []
        wall, cpu, node = measured(
            lambda opened=opened: opened.append(
                CassandraBackend.from_settings(_settings(args.host, _keyspace("costs_")))
            )
        )
        print(f"a new keyspace opened: {wall:.2f} s, node CPU {node:.2f} s, client {cpu:.2f} s")
        opened[0].drop_keyspace()
        opened[0].close()


def _import(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(HERE))
    from cassandra_ingest import generate_small
    from imixs_archive.archive.snapshots import Archive
    from imixs_archive.services.importer import (
        ImportSummary,
        _import_one,
        _StoreBehind,
        import_sources,
    )
    from imixs_archive.services.sources import find_sources
    from imixs_archive.storage.cassandra.backend import CassandraBackend
    from store_ingest import generate

    with tempfile.TemporaryDirectory(prefix="node-costs-") as folder:
        inputs = Path(folder)
        if args.workload == "small":
            generate_small(inputs, args.count, seed=1)
        else:
            generate(inputs, 24, 1, seed=1)  # all new content
        mb = sum(p.stat().st_size for p in inputs.iterdir()) / MB
        for _ in range(args.rounds):
            keyspace = _keyspace("costs_")
            backend = CassandraBackend.from_settings(_settings(args.host, keyspace))
            try:
                if args.pieces_compression == "lz4":
                    _cluster, session = _session(args.host)
                    session.execute(
                        f"ALTER TABLE {keyspace}.documents_data WITH compression = "
                        "{'class': 'LZ4Compressor'}"
                    )
                    _cluster.shutdown()
                sources = find_sources([str(inputs)])
                with Archive(backend) as archive:

                    def one(source: Any, archive: Archive = archive) -> ImportSummary:
                        summary = ImportSummary()
                        with _StoreBehind(archive, summary) as behind:
                            _import_one(archive, source, None, behind)
                        return summary

                    def run(archive: Archive = archive, sources: Any = sources) -> None:
                        if args.threads > 1:
                            with ThreadPoolExecutor(args.threads) as pool:
                                failed = sum(s.failed for s in pool.map(one, sources))
                        else:
                            failed = import_sources(archive, sources).failed
                        assert failed == 0

                    wall, cpu, node = measured(run)
                before_flush = node_cpu()
                subprocess.run(
                    [
                        str(HERE.parent / "scripts" / "cassandra-node"),
                        "nodetool",
                        "flush",
                        keyspace,
                    ],
                    check=True,
                    capture_output=True,
                )
                flushed = node + node_cpu() - before_flush
            finally:
                backend.drop_keyspace()
                backend.close()
            print(
                f"{args.workload}, {args.threads} file(s) at once, pieces "
                f"{args.pieces_compression}: {mb:.1f} MB at {mb / wall:.1f} MB/s; CPU per MB: "
                f"client {1000 * cpu / mb:.1f} ms, node {1000 * node / mb:.1f} ms "
                f"({1000 * flushed / mb:.1f} with its flush)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("hashing", "requests", "batch", "schema", "import"))
    parser.add_argument("--host", default=os.environ.get("ARCHIVE_TEST_CASSANDRA", "127.0.0.1"))
    parser.add_argument("--count", type=int, default=None, help="requests, groups or snapshots")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workload", choices=("big", "small"), default="big")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pieces-compression", choices=("zstd", "lz4"), default="zstd")
    args = parser.parse_args()
    defaults = {"requests": 5000, "batch": 2000, "import": 1000}
    args.count = args.count or defaults.get(args.part, 0)
    random.seed(1)
    {"hashing": hashing, "requests": requests, "batch": batch, "schema": schema, "import": _import}[
        args.part
    ](args)


if __name__ == "__main__":
    main()
