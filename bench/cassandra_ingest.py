"""Benchmark: importing into one Cassandra node against the bare driver writing the same bytes.

In one run, interleaved, pair by pair: the bare ``cassandra-driver`` writes the input
files' bytes as 256 KiB blobs (one prepared insert, ``--in-flight`` requests kept in
flight by the driver's ``execute_concurrent_with_args``) into a table of a keyspace made
beforehand; then the archive imports the same files (``import_sources``, one process, as
``import`` does for less than 32 MB or with ``--jobs 1``) into a keyspace of its own,
once per source tree given with ``--src`` (a ``PYTHONPATH``: the code before and after a
change). Each measurement is a child process; the time is the import's (or the writes')
alone, with the keyspace already created; the schema's creation is timed apart (first
start: ``CassandraBackend.from_settings`` on a keyspace that does not exist yet), and so
is a first-start import of ``--first`` small snapshots as a whole process (``python -m
imixs_archive import``, keyspace missing), and an open of the complete keyspace (what
every later start costs). Where the node runs on this machine, the CPU its process
spent during each timed part is read from ``/proc`` too ("node", ms per MB).

    .venv/bin/python bench/cassandra_ingest.py                         # this tree, 5 pairs
    .venv/bin/python bench/cassandra_ingest.py --src before=/work/main/src \
        --src after=/tmp/wt/src --pairs 5
    .venv/bin/python bench/cassandra_ingest.py --workload small --count 2000
    .venv/bin/python bench/cassandra_ingest.py --src java:java=src --src content:content=src

A label ``NAME:CUTS`` runs its tree with ``ARCHIVE_FILE_CUTS=CUTS`` (``java`` or
``content``: the pieces files are stored in; trees from before the setting ignore it).

Workloads: ``big`` (``bench/store_ingest.py``'s: instances with attachments of 50 KB to
5 MB carried from snapshot to snapshot), ``small`` (snapshots of 4-6 KB of XML, an
attachment of 20-200 KB on every tenth, carried forward to the instance's next).
Needs a node (``scripts/cassandra-node start``). Not a test: figures depend on the
machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lib.node_cpu import node_cpu

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024
BLOB = 256 * 1024
DDL_TIMEOUT = 120.0
"""Seconds a keyspace's creation or drop may take (a busy shared node is slow at them)."""


def generate_small(folder: Path, count: int, seed: int) -> int:
    """``count`` small snapshots, 10 per instance; XML bytes written."""
    from imixs_archive.document.xml_writer import write_xml
    from store_ingest import metadata, snapshot

    rng = random.Random(seed)
    written = 0
    files: dict[str, bytes] = {}
    origin = ""
    for number in range(count):
        if number % 10 == 0:
            origin = f"{number:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
            files = {}
        if number % 10 == 5:
            files[f"scan-{number}.pdf"] = rng.randbytes(rng.randint(20_000, 200_000))
        doc = snapshot(origin, number % 10, files, metadata(rng, rng.randint(3_000, 5_000)))
        with (folder / f"{origin}-{number % 10}.xml").open("wb") as out:
            written += write_xml(doc, out)
    return written


def _letters() -> str:
    """A keyspace name's tail (the Java service's pattern allows letters and '_')."""
    return "".join(random.choices("abcdefghijklmnopqrstuvwxyz", k=12))


def _settings(host: str, keyspace: str) -> Any:
    from imixs_archive.config import load_settings

    return load_settings(
        {
            "ARCHIVE_CLUSTER_CONTACTPOINTS": host,
            "ARCHIVE_CLUSTER_KEYSPACE": keyspace,
            "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "1",
            "ARCHIVE_CLUSTER_CONSISTENCY_READ": "ONE",
            "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "ONE",
        }
    )


def child_archive(host: str, inputs: Path) -> dict[str, float]:
    """Create a keyspace (timed), import ``inputs`` into it (timed), drop it."""
    from imixs_archive.archive.snapshots import Archive
    from imixs_archive.services.importer import import_sources
    from imixs_archive.services.sources import find_sources
    from imixs_archive.storage.cassandra.backend import CassandraBackend

    keyspace = "bench_ci_" + _letters()
    started = time.perf_counter()
    backend = CassandraBackend.from_settings(_settings(host, keyspace))
    schema_s = time.perf_counter() - started
    try:
        sources = find_sources([str(inputs)])
        cuts = os.environ.get("ARCHIVE_FILE_CUTS")
        with Archive(backend, **({"file_cuts": cuts} if cuts else {})) as archive:
            cpu, wall, node = time.process_time(), time.perf_counter(), node_cpu()
            summary = import_sources(archive, sources)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            node = node_cpu() - node
        assert summary.failed == 0 and summary.present == 0, summary.failures
        started = time.perf_counter()
        CassandraBackend.from_settings(_settings(host, keyspace)).close()
        reopen_s = time.perf_counter() - started
    finally:
        backend.drop_keyspace()
        backend.close()
    return {
        "seconds": wall,
        "cpu": cpu,
        "node_cpu": node,
        "schema_s": schema_s,
        "reopen_s": reopen_s,
        "snapshots": summary.new,
    }


def child_raw(host: str, inputs: Path, in_flight: int) -> dict[str, float]:
    """The input files' bytes as 256 KiB blobs, written by the bare driver."""
    from cassandra.cluster import Cluster
    from cassandra.concurrent import execute_concurrent_with_args

    from imixs_archive.storage.cassandra.session import QueueingConnection

    cluster = Cluster([host], protocol_version=4, connection_class=QueueingConnection)
    session = cluster.connect()
    session.default_timeout = DDL_TIMEOUT
    keyspace = "raw_ci_" + _letters()
    session.execute(
        f"CREATE KEYSPACE {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    try:
        session.execute(f"CREATE TABLE {keyspace}.blobs (id text PRIMARY KEY, data blob)")
        insert = session.prepare(f"INSERT INTO {keyspace}.blobs (id, data) VALUES (?, ?)")
        paths = sorted(inputs.iterdir())
        places: list[tuple[Path, int]] = []  # of each blob, in the order written

        def blobs(wanted: list[tuple[Path, int]] | None) -> Any:
            for path in paths:
                with path.open("rb") as source:
                    number = 0
                    while block := source.read(BLOB):
                        if wanted is None or (path, number) in wanted:
                            places.append((path, number))
                            yield (f"{path.name}:{number}", block)
                        number += 1

        cpu, wall, node = time.process_time(), time.perf_counter(), node_cpu()
        wanted: list[tuple[Path, int]] | None = None
        for _attempt in range(5):  # what timed out (a busy shared node) is written again
            places.clear()
            results = execute_concurrent_with_args(
                session, insert, blobs(wanted), concurrency=in_flight, raise_on_first_error=False
            )
            wanted = [place for place, (ok, _r) in zip(places, results, strict=True) if not ok]
            if not wanted:
                break
        assert not wanted, f"{len(wanted)} writes kept failing"
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        node = node_cpu() - node
    finally:
        session.execute(f"DROP KEYSPACE {keyspace}")
        cluster.shutdown()
    return {"seconds": wall, "cpu": cpu, "node_cpu": node}


def first_start(src: str, host: str, inputs: Path, cuts: str = "") -> dict[str, float]:
    """``python -m imixs_archive import`` of a few small snapshots into a keyspace that
    does not exist yet: the whole process, schema creation included; then as many other
    small snapshots into the keyspace now complete (a later start)."""
    keyspace = "bench_fs_" + _letters()
    env = {
        **os.environ,
        "PYTHONPATH": src,
        "ARCHIVE_CLUSTER_CONTACTPOINTS": host,
        "ARCHIVE_CLUSTER_KEYSPACE": keyspace,
        "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "1",
        "ARCHIVE_CLUSTER_CONSISTENCY_READ": "ONE",
        "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "ONE",
        **({"ARCHIVE_FILE_CUTS": cuts} if cuts else {}),
    }
    seconds = []
    try:
        for folder in (inputs / "first", inputs / "later"):
            command = [sys.executable, "-m", "imixs_archive", "import", str(folder)]
            started = time.perf_counter()
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
            seconds.append(time.perf_counter() - started)
    finally:
        _run_child(src, ["--child", "drop", "--keyspace", keyspace, "--host", host])
    return {"seconds": seconds[0], "later": seconds[1]}


def _run_child(src: str, arguments: list[str], cuts: str = "") -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
    if cuts:
        env["ARCHIVE_FILE_CUTS"] = cuts
    out = subprocess.run(
        [sys.executable, str(HERE / "cassandra_ingest.py"), *arguments],
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    figures: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return figures


def _drop(host: str, keyspace: str) -> dict[str, float]:
    from cassandra.cluster import Cluster

    cluster = Cluster([host], protocol_version=4)
    try:
        drop = f"DROP KEYSPACE IF EXISTS {keyspace}"
        cluster.connect().execute(drop, timeout=DDL_TIMEOUT)
    finally:
        cluster.shutdown()
    return {}


def _spread(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.2f} "
        f"(min {min(values):.2f}, max {max(values):.2f}; "
        + " / ".join(f"{v:.2f}" for v in values)
        + ")"
    )


def _workload(args: argparse.Namespace, inputs: Path, first: Path) -> float:
    """Write the workload into ``inputs`` and ``--first`` small snapshots into ``first``;
    the workload's MB."""
    sys.path.insert(0, str(HERE))
    if args.workload == "big":
        from store_ingest import generate

        xml_bytes = generate(inputs, args.instances, args.steps, seed=1)["xml_bytes"]
    else:
        xml_bytes = generate_small(inputs, args.count, seed=1)
    for name, seed in (("first", 2), ("later", 3)):
        (first / name).mkdir()
        generate_small(first / name, args.first, seed=seed)
    files = len(os.listdir(inputs))
    print(f"workload {args.workload}: {xml_bytes / MB:.1f} MB of snapshot XML in {files} files")
    return xml_bytes / MB


def _pair(
    number: int,
    args: argparse.Namespace,
    sources: dict[str, str],
    folders: tuple[Path, Path, float],
    figures: dict[str, dict[str, list[float]]],
) -> None:
    """One round: the bare driver, then each source tree (in turn first, pair by pair)."""
    inputs, first, mb = folders
    host = ["--host", args.host]
    raw = _run_child(
        next(iter(sources.values())),
        ["--child", "raw", "--inputs", str(inputs), "--in-flight", str(args.in_flight), *host],
    )
    raw_rate = mb / raw["seconds"]
    figures.setdefault("raw", {}).setdefault("MB/s", []).append(raw_rate)
    line = [
        f"pair {number}: raw {raw_rate:.1f} MB/s ({1000 * raw['cpu'] / mb:.1f} ms CPU/MB, "
        f"node {1000 * raw['node_cpu'] / mb:.1f})"
    ]
    labels = list(sources)
    if number % 2 == 0:
        labels.reverse()
    for label in labels:
        cuts = label.partition(":")[2]
        arguments = ["--child", "archive", "--inputs", str(inputs), *host]
        got = _run_child(sources[label], arguments, cuts)
        starts = first_start(sources[label], args.host, first, cuts)
        whole = starts["seconds"]
        rate = mb / got["seconds"]
        values = {
            "MB/s": rate,
            "ratio to raw": rate / raw_rate,
            "client CPU ms/MB": 1000 * got["cpu"] / mb,
            "node CPU ms/MB": 1000 * got["node_cpu"] / mb,
            "open with the keyspace created, s": got["schema_s"],
            "open of the complete keyspace, s": got["reopen_s"],
            f"import of {args.first} small snapshots, first start, whole process, s": whole,
            f"import of {args.first} small snapshots, later start, whole process, s": starts[
                "later"
            ],
        }
        for name, value in values.items():
            figures.setdefault(label, {}).setdefault(name, []).append(value)
        line.append(
            f"{label} {rate:.1f} MB/s {got['snapshots'] / got['seconds']:.0f} snap/s "
            f"({values['client CPU ms/MB']:.1f} ms CPU/MB, node {values['node CPU ms/MB']:.1f}) "
            f"ratio {rate / raw_rate:.2f}, "
            f"first open {got['schema_s']:.2f} s, reopen {got['reopen_s']:.2f} s, "
            f"small import first start {whole:.2f} s, later {starts['later']:.2f} s"
        )
    print("; ".join(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default=os.environ.get("ARCHIVE_TEST_CASSANDRA", "127.0.0.1"))
    parser.add_argument("--workload", choices=("big", "small"), default="big")
    parser.add_argument("--instances", type=int, default=4, help="big: process instances")
    parser.add_argument("--steps", type=int, default=6, help="big: snapshots per instance")
    parser.add_argument("--count", type=int, default=2000, help="small: snapshots")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--in-flight", type=int, default=8, help="bare driver's requests")
    parser.add_argument("--first", type=int, default=20, help="small snapshots, first start")
    parser.add_argument(
        "--src",
        action="append",
        default=[],
        help="label=PYTHONPATH of a source tree to measure (repeatable; default: this one)",
    )
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--child", choices=("archive", "raw", "drop"), help=argparse.SUPPRESS)
    parser.add_argument("--inputs", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--keyspace", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        children = {
            "archive": lambda: child_archive(args.host, args.inputs),
            "raw": lambda: child_raw(args.host, args.inputs, args.in_flight),
            "drop": lambda: _drop(args.host, args.keyspace),
        }
        print(json.dumps(children[args.child]()))
        return
    sources = dict(item.split("=", 1) for item in args.src) or {"this": str(HERE.parent / "src")}
    work = Path(tempfile.mkdtemp(prefix="cassandra-ingest-", dir=args.dir))
    try:
        inputs, first = work / "in", work / "first"
        inputs.mkdir()
        first.mkdir()
        mb = _workload(args, inputs, first)
        figures: dict[str, dict[str, list[float]]] = {}
        for number in range(1, args.pairs + 1):
            _pair(number, args, sources, (inputs, first, mb), figures)
        for label, named in figures.items():
            for name, values in named.items():
                print(f"{label} {name}: {_spread(values)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
