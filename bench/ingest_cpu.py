"""CPU cost of archiving one large attachment: new content, then the same content again.

    .venv/bin/python bench/ingest_cpu.py
    .venv/bin/python bench/ingest_cpu.py --switch-interval 0.0002   # the experiment in README

Reports MB/s of snapshot XML, CPU/wall (how many cores were busy) and CPU ms per MB. Not a
test.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import make_snapshot


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=150, help="attachment size")
    parser.add_argument("--switch-interval", type=float, default=None)
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    data = random.Random(1).randbytes(args.mb * 1_000_000)
    runs = [
        ("new content", to_xml(make_snapshot(0, files={"a.bin": data}))),
        ("known content", to_xml(make_snapshot(1, files={"a.bin": data}))),
    ]
    work = Path(tempfile.mkdtemp(prefix="imixs-ingest-cpu-"))
    try:
        with SQLiteBackend(work) as backend, Archive(backend) as archive:
            for label, xml in runs:
                blocks = [xml[i : i + 65536] for i in range(0, len(xml), 65536)]
                cpu, wall = _cpu(), time.perf_counter()
                list(archive.ingest(blocks))
                wall, cpu = time.perf_counter() - wall, _cpu() - cpu
                mb = len(xml) / 1e6
                print(
                    f"{label}: {mb / wall:.0f} MB/s of XML, CPU/wall {cpu / wall:.2f}, "
                    f"{cpu * 1000 / mb:.2f} ms CPU per MB"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
