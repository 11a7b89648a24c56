"""Imports beside readers, run after run: nothing corrupt, nothing lost (issue 48).

Each run imports realistic small snapshots (``bench/scale_data.py``: 10 per process
instance, 4-6 KB of XML, an attachment on every tenth, carried forward) into a new store
with the real CLI, while other processes open the store, read a row and close it in a loop
(what ``stats``, a cron ``verify``, a second ``serve`` or a monitoring probe do). After each
run: the import exited 0 and stored every snapshot, every snapshot id reads back, ``verify``
exits 0, and on SQLite the file passes ``integrity_check``. On the code before the fix 2 of 2
runs of 5,000 ended with exit 6, "database disk image is malformed".

    .venv/bin/python bench/import_beside_readers.py --runs 100 --store sqlite
    ARCHIVE_TEST_CASSANDRA=127.0.0.1:9042 .venv/bin/python bench/import_beside_readers.py \
        --runs 100 --store cassandra

Not a test: its length is the point. Figures go to bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from imixs_archive.document import write_xml
from scale_data import instances  # bench/ is the script's folder, first on its path

READER = """
import sys
from imixs_archive.config import load_settings
from imixs_archive.runtime import open_store
from imixs_archive.storage.model import SNAPSHOTS
settings = load_settings()
while True:
    try:
        store = open_store(settings, create=False)
    except Exception:
        continue  # not made yet
    with store:
        next(iter(store.scan(SNAPSHOTS, limit=1, columns=["snapshot"])), None)
"""

CHECK = """
import sys
from imixs_archive.config import load_settings
from imixs_archive.runtime import open_store
from imixs_archive.storage.model import SNAPSHOTS
wanted = sys.stdin.read().split()
with open_store(load_settings(), create=False) as store:
    missing = [sid for sid in wanted if store.get(SNAPSHOTS, {"snapshot": sid}) is None]
    problems = store.file_problems(full=True)
print(len(missing), len(problems), *(missing[:3] + problems[:3]))
"""


def make_input(folder: Path, count: int) -> list[str]:
    """One XML file per snapshot; the snapshot ids."""
    folder.mkdir(parents=True)
    ids = []
    for number, doc in enumerate(instances(count, 2.0)):
        with (folder / f"s{number:06d}.xml").open("wb") as out:
            write_xml(doc, out)
        ids.append(str(doc.get_first("$uniqueid")))
    return ids


def store_env(store: str, where: Path, run: int) -> dict[str, str]:
    if store == "sqlite":
        return {"ARCHIVE_DATA_DIR": str(where / f"store-{run}")}
    return {
        "ARCHIVE_CLUSTER_CONTACTPOINTS": os.environ["ARCHIVE_TEST_CASSANDRA"],
        # letters and underscores only
        "ARCHIVE_CLUSTER_KEYSPACE": "beside_readers_"
        + "".join(random.SystemRandom().choices(string.ascii_lowercase, k=10)),
        "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "1",
    }


def drop(env: dict[str, str]) -> None:
    if "ARCHIVE_CLUSTER_KEYSPACE" not in env:
        return
    code = (
        "from imixs_archive.config import load_settings;"
        "from imixs_archive.runtime import open_store;"
        "s = open_store(load_settings(), create=False); s.drop_keyspace(); s.close()"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        stderr=subprocess.DEVNULL,  # an import that failed early made no keyspace
        check=False,
    )


def one_run(run: int, args: argparse.Namespace, source: Path, ids: list[str]) -> str:
    """'' when the run held, else what broke."""
    env = {**os.environ, **store_env(args.store, args.where, run)}
    readers = [
        subprocess.Popen([sys.executable, "-c", READER], env=env) for _ in range(args.readers)
    ]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "imixs_archive", "import", str(source)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        for reader in readers:
            reader.kill()
            reader.wait()
    try:
        if done.returncode != 0 or f"{len(ids)} new" not in done.stdout + done.stderr:
            return f"import exit {done.returncode}: {(done.stdout + done.stderr)[-300:]}"
        checked = subprocess.run(
            [sys.executable, "-c", CHECK],
            env=env,
            input="\n".join(ids),
            capture_output=True,
            text=True,
            check=False,
        )
        missing, problems, *examples = checked.stdout.split() or ["?", "?"]
        if checked.returncode != 0 or missing != "0" or problems != "0":
            found = f"missing {missing}, file problems {problems}: {examples}"
            return f"{found} {checked.stderr[-300:]}"
        verify = subprocess.run(
            [sys.executable, "-m", "imixs_archive", "verify"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if verify.returncode != 0:
            return f"verify exit {verify.returncode}: {(verify.stdout + verify.stderr)[-300:]}"
        return ""
    finally:
        drop(env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--count", type=int, default=5000, help="snapshots per import")
    parser.add_argument("--readers", type=int, default=1, help="processes opening the store")
    parser.add_argument("--store", choices=("sqlite", "cassandra"), default="sqlite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="beside-readers-") as where:
        args.where = Path(where)
        ids = make_input(args.where / "input", args.count)
        failures = 0
        started = time.monotonic()
        for run in range(args.runs):
            began = time.monotonic()
            broke = one_run(run, args, args.where / "input", ids)
            failures += bool(broke)
            status = f"FAILED {broke}" if broke else "ok"
            print(f"run {run + 1}/{args.runs}: {time.monotonic() - began:.1f} s {status}")
            sys.stdout.flush()
            if args.store == "sqlite":
                subprocess.run(["rm", "-rf", str(args.where / f"store-{run}")], check=False)
        total = time.monotonic() - started
        print(
            f"{args.store}: {args.runs} runs of {args.count} snapshots beside {args.readers}"
            f" reader(s), {failures} failed, {total:.0f} s"
        )
        sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
