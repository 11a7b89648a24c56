"""Benchmark of restore (into the workflow test double over loopback) and backup (to files).

    .venv/bin/python bench/restore_backup.py                      # the recorded run
    .venv/bin/python bench/restore_backup.py --instances 20       # a quick one

Generates an archive of process instances (3 snapshots each, attachments carried
forward), then measures: backup of the newest snapshot per instance to files, and a range
restore into an empty workflow double with the given worker count. Not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document
from imixs_archive.recovery.backup import backup
from imixs_archive.recovery.restore import Restorer, RestoreRange
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.workflow.client import WorkflowClient
from support.workflow_double import WorkflowDouble

MB = 1024 * 1024
DAY = dt.datetime(2024, 1, 10, 8, 0, tzinfo=dt.UTC)


def populate(double: WorkflowDouble, archive: Archive, instances: int, file_kb: int) -> None:
    rng = random.Random(1)
    for number in range(instances):
        uid = f"{number:08x}-0000-4000-8000-000000000000"
        files = {"scan.pdf": rng.randbytes(file_kb * 1024)}
        for step in range(3):
            snapshot = double.save(
                Document({"$uniqueid": uid, "subject": f"case {number}", "$taskid": step}),
                files=dict(files),
                modified=DAY + dt.timedelta(hours=step * 5, seconds=number),
                event=False,
            )
            archive.store(snapshot.copy())
    double.wipe()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--file-kb", type=int, default=1024)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="imixs-restore-bench-"))
    try:
        with (
            WorkflowDouble() as double,
            SQLiteBackend(work / "store") as backend,
            Archive(backend) as archive,
        ):
            populate(double, archive, args.instances, args.file_kb)
            started = time.perf_counter()
            summary = backup(archive, work / "backup")
            elapsed = time.perf_counter() - started
            print(
                f"backup: {summary.written} instances, {summary.bytes_written / MB:.0f} MB in "
                f"{elapsed:.1f} s: {summary.bytes_written / MB / elapsed:.1f} MB/s, "
                f"{summary.written / elapsed:.1f} instances/s"
            )
            wanted = RestoreRange(DAY - dt.timedelta(days=1), DAY + dt.timedelta(days=1))
            with WorkflowClient(double.url, read_timeout=60) as client:
                started = time.perf_counter()
                report = Restorer(archive, client, workers=args.workers).restore_range(wanted)
                elapsed = time.perf_counter() - started
            print(
                f"restore ({args.workers} workers): {report.restored} instances, "
                f"{report.bytes / MB:.0f} MB of attachments in {elapsed:.1f} s: "
                f"{report.bytes / MB / elapsed:.1f} MB/s, {report.restored / elapsed:.1f} "
                f"instances/s, {len(report.failed)} failed"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
