"""Baseline for bench/cassandra_node.py: what the node and the driver alone do with 1 MiB
blobs, without the archive (no chunking, hashing, XML or bookkeeping rows).

    .venv/bin/python bench/cassandra_raw.py                  # node at 127.0.0.1:9042
    .venv/bin/python bench/cassandra_raw.py --mib 200 --in-flight 16

Writes ``--mib`` rows of 1 MiB of random bytes into a fresh keyspace (one copy), with at
most ``--in-flight`` requests outstanding, then reads them back twice the same way; prints
wall MB/s and the client's CPU per MB of each, then drops the keyspace.

The driver's connection is the archive's (``QueueingConnection``): with the driver's own,
a request started while the socket's send buffer is full fails with ``ConnectionBusy``
(``--mib 200`` did, at random), and leaks a request id each time.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from cassandra.cluster import Cluster

from imixs_archive.storage.cassandra.session import QueueingConnection

MIB = 1 << 20


def _timed(label: str, mib: int, work: Callable[[], object]) -> None:
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"{label}: {mib / wall:.1f} MB/s, client {cpu * 1000 / mib:.1f} ms CPU per MB")


def _windowed(session: Any, statement: Any, params: list[tuple[Any, ...]], width: int) -> list[Any]:
    results: list[Any] = []
    for start in range(0, len(params), width):
        futures = [session.execute_async(statement, p) for p in params[start : start + width]]
        results.extend(future.result() for future in futures)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--mib", type=int, default=100, help="rows of 1 MiB")
    parser.add_argument("--in-flight", type=int, default=8)
    args = parser.parse_args()
    cluster = Cluster([args.host], protocol_version=4, connection_class=QueueingConnection)
    session = cluster.connect()
    keyspace = "raw_" + uuid.uuid4().hex[:10]
    session.execute(
        f"CREATE KEYSPACE {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    try:
        session.execute(f"CREATE TABLE {keyspace}.blobs (id int PRIMARY KEY, data blob)")
        insert = session.prepare(f"INSERT INTO {keyspace}.blobs (id, data) VALUES (?, ?)")
        select = session.prepare(f"SELECT data FROM {keyspace}.blobs WHERE id = ?")
        blob = os.urandom(MIB)
        rows = [(n, blob) for n in range(args.mib)]
        keys = [(n,) for n in range(args.mib)]
        _timed("write", args.mib, lambda: _windowed(session, insert, rows, args.in_flight))
        for round_ in (1, 2):

            def read() -> None:
                found = _windowed(session, select, keys, args.in_flight)
                assert sum(len(r.one()[0]) for r in found) == args.mib * MIB

            _timed(f"read {round_}", args.mib, read)
    finally:
        session.execute(f"DROP KEYSPACE {keyspace}")
        cluster.shutdown()


if __name__ == "__main__":
    main()
