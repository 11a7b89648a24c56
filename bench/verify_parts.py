"""Benchmark: ``verify`` split over 1, 2 and 4 worker processes (``--part K/N``), and what
the scrub's slices cost, on a real Cassandra node (or the embedded store with ``--sqlite``).

Builds an archive of realistic small snapshots (about 10 per process instance, 4-6 KB of
XML each, an attachment of 20-100 KB on every tenth, over two years) straight through the
archive's write path, then, interleaved over ``--rounds`` rounds:

* ``verify --part K/N --restart`` run as N processes at once (N = 1, 2, 4): the wall time
  until the last part ends, the snapshots a second that makes, and the CPU the workers
  and the local node spent (per snapshot: the same at every N when the parts add no
  work, so that only the cores bound the speed-up);

and once:

* a whole verify in this process (for the slices to be compared with);
* the scrub's slices of one cycle, paced by a clock that moves a day per slice over a
  10-day period (each slice a tenth): their total time against the whole verify;
* one real ``verify --slice`` (the defaults: a 1 h slice of a 30-day period).

    ARCHIVE_TEST_CASSANDRA=127.0.0.1:9042 .venv/bin/python bench/verify_parts.py
    .venv/bin/python bench/verify_parts.py --snapshots 2000 --rounds 1   # quick
    .venv/bin/python bench/verify_parts.py --sqlite

Not a test: figures depend on the machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from imixs_archive.archive.scrub import scrub_slice
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.document.model import Document
from imixs_archive.runtime import open_store
from lib.node_cpu import node_cpu

FIRST = dt.datetime(2024, 1, 1, 7, tzinfo=dt.UTC)
GROUPS = ("Invoice", "Contract", "Ticket", "Order", "Complaint")
DAY_MS = 86_400_000
VERIFY = (sys.executable, "-m", "imixs_archive", "verify")


def snapshot(rng: random.Random, origin: str, step: int, when: dt.datetime) -> Document:
    doc = Document(
        {
            "$uniqueid": f"{origin}-{int(when.timestamp() * 1000)}",
            "$created": when,
            "$modified": when,
            "type": "snapshot-workitem",
            "$workflowgroup": GROUPS[int(origin[:8], 16) % len(GROUPS)],
            "$taskid": 1000 + 10 * step,
            **{f"txt{n}": "x" * rng.randrange(200, 400) for n in range(14)},
        }
    )
    if step % 10 == 9:
        data = rng.randbytes(rng.randrange(20_000, 100_000))
        doc["$file"] = [{f"scan{step}.pdf": ["application/pdf", data, {}]}]
    return doc


def generate(env: dict[str, str], count: int) -> float:
    began = time.monotonic()
    instances = max(1, count // 10)

    def one(instance: int) -> None:
        rng = random.Random(instance)
        origin = f"{rng.getrandbits(32):08x}-0000-4000-8000-{instance:012x}"
        start = FIRST + dt.timedelta(minutes=rng.randrange(730 * 24 * 60))
        for step in range(10):
            archive.store(snapshot(rng, origin, step, start + dt.timedelta(hours=7 * step)))

    with (
        open_store(load_settings(env)) as backend,
        Archive(backend) as archive,
        ThreadPoolExecutor(8) as pool,
    ):
        list(pool.map(one, range(instances)))
    return time.monotonic() - began


def parts_run(env: dict[str, str], parts: int) -> tuple[float, float, float]:
    """The wall time until the last of ``parts`` processes ends, the CPU seconds of the
    processes together, and the node's CPU seconds meanwhile (0 on the embedded store
    or a remote node)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    node = node_cpu()
    began = time.monotonic()
    running = [
        subprocess.Popen(
            [*VERIFY, "--part", f"{k}/{parts}", "--restart", "--json"],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for k in range(1, parts + 1)
    ]
    codes = [process.wait() for process in running]
    wall = time.monotonic() - began
    assert all(code in (0, 5) for code in codes), codes
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
    return wall, cpu, node_cpu() - node


def slices(env: dict[str, str]) -> dict[str, Any]:
    with open_store(load_settings(env)) as backend, Archive(backend) as archive:
        began = time.monotonic()
        whole = archive.verify_part(restart=True).report
        whole_s = time.monotonic() - began
        clock = [int(time.time() * 1000)]
        times = []
        while True:
            began = time.monotonic()
            report = scrub_slice(
                backend,
                period=10 * 86_400,
                interval=86_400,
                holder=f"bench@{os.uname().nodename}:{os.getpid()}:x",
                now=lambda: clock[0],
            )
            times.append(time.monotonic() - began)
            clock[0] += DAY_MS
            if report.cycle_finished:
                break
    return {"snapshots": whole.snapshots, "whole_s": whole_s, "slices": times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sqlite", action="store_true")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    env = {**os.environ}
    folder = Path(tempfile.mkdtemp(prefix="verify-parts-"))
    if args.sqlite:
        env["ARCHIVE_DATA_DIR"] = str(folder)
    else:
        env.update(
            ARCHIVE_CLUSTER_CONTACTPOINTS=os.environ.get(
                "ARCHIVE_TEST_CASSANDRA", "127.0.0.1:9042"
            ),
            ARCHIVE_CLUSTER_KEYSPACE="bench_verify_"
            + "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)),
            ARCHIVE_CLUSTER_REPLICATION_FACTOR="1",
        )
    print(f"store: {'sqlite ' + str(folder) if args.sqlite else env['ARCHIVE_CLUSTER_KEYSPACE']}")
    made = generate(env, args.snapshots)
    print(f"generated {args.snapshots} snapshots in {made:.0f} s")
    try:
        results: dict[int, list[float]] = {1: [], 2: [], 4: []}
        cpus: dict[int, list[tuple[float, float]]] = {1: [], 2: [], 4: []}
        for _round in range(args.rounds):
            for parts in results:
                wall, cpu, node = parts_run(env, parts)
                results[parts].append(wall)
                cpus[parts].append((cpu, node))
                print(
                    f"  --part K/{parts}: {wall:.1f} s; CPU {cpu:.1f} s in the workers, "
                    f"{node:.1f} s in the node",
                    flush=True,
                )
        for parts, times in results.items():
            best = min(times)
            rate = args.snapshots / best
            speedup = min(results[1]) / best
            per = [1e6 * (cpu + node) / args.snapshots for cpu, node in cpus[parts]]
            print(
                f"{parts} worker(s): best {best:.1f} s of {[round(t, 1) for t in times]}, "
                f"{rate:.0f} snapshots/s, speed-up {speedup:.2f}x; CPU (workers and node) "
                f"per snapshot {', '.join(f'{us:.0f}' for us in per)} us"
            )
        scrub = slices(env)
        total = sum(scrub["slices"])
        print(
            f"whole verify in process: {scrub['whole_s']:.1f} s; 10 paced slices: "
            f"{total:.1f} s in all ({total / scrub['whole_s']:.2f}x), each "
            f"{min(scrub['slices']):.1f}-{max(scrub['slices']):.1f} s"
        )
        env_slice = {**env, "ARCHIVE_SCRUB_PERIOD": "30d", "ARCHIVE_SCRUB_INTERVAL": "1h"}
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "imixs_archive", "verify", "--slice"],
            env=env_slice,
            capture_output=True,
            text=True,
        )
        print(f"verify --slice (1 h of 30 d), whole process: {time.monotonic() - began:.2f} s:")
        print("  " + done.stdout.strip().replace("\n", "\n  "))
    finally:
        if not args.keep and not args.sqlite:
            with open_store(load_settings(env)) as backend:
                backend.drop_keyspace()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
