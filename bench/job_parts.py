"""Benchmark: ``export-table`` and ``backup`` of everything in one part and in two
(``--part K/N``, two processes at once), on the embedded store (or a Cassandra node with
``ARCHIVE_TEST_CASSANDRA``).

Builds an archive of ``--instances`` process instances of 10 snapshots each (about 4 KB of
XML each, no attachments) through the archive's write path, then, over ``--rounds``
rounds, runs as separate processes (the CLI, as an operator would):

* ``export-table OUT.parquet --items subject,amount,$taskid --restart`` whole, and as
  ``--part 1/2`` and ``--part 2/2`` at once (wall time until the last ends);
* ``backup DIR --all-snapshots --jobs 1`` whole, and as two parts at once, each into a
  fresh folder;

and checks that the two parts hold the rows (files) of the whole.

    .venv/bin/python bench/job_parts.py --instances 800 --rounds 2
    ARCHIVE_TEST_CASSANDRA=127.0.0.1:9042 .venv/bin/python bench/job_parts.py

Not a test: figures depend on the machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from imixs_archive.config import load_settings
from imixs_archive.document.model import Long
from imixs_archive.runtime import open_archive, open_store

ROOT = Path(__file__).resolve().parents[1]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
sys.path.insert(0, str(ROOT / "tests"))

from support.snapshots import make_snapshot  # noqa: E402


def store_env(folder: Path) -> dict[str, str]:
    node = os.environ.get("ARCHIVE_TEST_CASSANDRA")
    if not node:
        return {"ARCHIVE_DATA_DIR": str(folder / "store")}
    keyspace = "bench_parts_" + "".join(secrets.choice(LETTERS) for _ in range(8))
    return {
        "ARCHIVE_CLUSTER_CONTACTPOINTS": node,
        "ARCHIVE_CLUSTER_KEYSPACE": keyspace,
        "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "1",
    }


def fill(env: dict[str, str], instances: int) -> int:
    with open_archive(load_settings(env)) as archive, archive.storage.durable_at_end():
        for k in range(1, instances + 1):
            origin = f"{k:08x}-0000-4000-8000-{k:012x}"
            for step in range(10):
                archive.store(make_snapshot(step, origin=origin, amount=Long(k), notes="x" * 3000))
    return instances * 10


def timed(commands: list[list[str]], env: dict[str, str]) -> float:
    """Wall time of the commands run at once, until the last ends."""
    started = time.perf_counter()
    running = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL) for c in commands]
    if any(p.wait() != 0 for p in running):
        raise SystemExit(f"failed: {commands}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="job-parts-"))
    store = store_env(folder)
    env = {**os.environ, **store, "PYTHONPATH": str(ROOT / "src")}
    cli = [sys.executable, "-m", "imixs_archive"]
    try:
        snapshots = fill(store, args.instances)
        print(f"{snapshots} snapshots, {args.instances} instances")
        items = ["--items", "subject,amount,$taskid", "--restart"]
        for round in range(1, args.rounds + 1):
            out = folder / f"out{round}"
            out.mkdir()
            whole = timed([[*cli, "export-table", str(out / "whole.parquet"), *items]], env)
            parts = [
                [*cli, "export-table", str(out / "t.parquet"), *items, "--part", f"{k}/2"]
                for k in (1, 2)
            ]
            two = timed(parts, env)
            _check_rows(out)
            print(f"round {round}: export-table 1 part {whole:.2f} s, 2 parts {two:.2f} s")
            backup = [*cli, "backup", "--create"]
            one = timed([[*backup, str(out / "bk1"), "--all-snapshots", "--jobs", "1"]], env)
            split = [
                [*backup, str(out / "bk2"), "--all-snapshots", "--jobs", "1", "--part", f"{k}/2"]
                for k in (1, 2)
            ]
            both = timed(split, env)
            _check_files(out)
            print(f"round {round}: backup 1 part {one:.2f} s, 2 parts {both:.2f} s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if "ARCHIVE_CLUSTER_KEYSPACE" in store:
            with open_store(load_settings(store)) as backend:
                backend.drop_keyspace()  # type: ignore[attr-defined]


def _check_rows(out: Path) -> None:
    import pyarrow.parquet as pq

    def ids(name: str) -> list[str]:
        return [str(v) for v in pq.read_table(out / name).column("snapshot").to_pylist()]

    parts = ids("t.part-1-of-2.parquet") + ids("t.part-2-of-2.parquet")
    assert sorted(parts) == sorted(ids("whole.parquet")), "the parts differ from the whole"


def _check_files(out: Path) -> None:
    def files(name: str) -> set[str]:
        return {str(p.relative_to(out / name)) for p in (out / name).rglob("*.xml")}

    assert files("bk1") == files("bk2"), "the parts' backup differs from the whole"


if __name__ == "__main__":
    main()
