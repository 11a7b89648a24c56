"""Benchmark: what SQLite's check of the embedded store's own file costs
(``Backend.file_problems``): ``quick_check`` of the whole file (what every whole ``verify``
and ``doctor`` run), ``integrity_check`` (``verify --full``), and ``quick_check`` table by
table (the scrub's way, one table after another over its period), each from a cold cache
(the file's pages dropped from the page cache first: ``posix_fadvise(DONTNEED)``, which
touches this file only) and warm.

    .venv/bin/python bench/scale_data.py /tmp/scale-1e5 100000
    .venv/bin/python bench/file_check.py /tmp/scale-1e5 --rounds 2

Not a test: figures depend on the machine and its disk. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

from imixs_archive.storage.model import TABLES
from imixs_archive.storage.sqlite.backend import SQLiteBackend


def drop_cache(path: Path) -> None:
    """The file's pages out of the page cache (only this file's)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("folder", type=Path, help="a data folder (bench/scale_data.py)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    path = args.folder / "archive.db"
    print(f"{path}: {path.stat().st_size / 2**20:,.0f} MiB, load {os.getloadavg()[0]:.1f}")
    with SQLiteBackend(args.folder) as store:
        checks: dict[str, Callable[[], object]] = {
            "quick_check": lambda: store.file_problems(),
            "integrity_check": lambda: store.file_problems(full=True),
            "quick_check per table": lambda: [store.file_problems(t.name) for t in TABLES],
        }
        for round_ in range(1, args.rounds + 1):
            for name, run in checks.items():
                drop_cache(path)
                cold = timed(run)
                warm = timed(run)
                print(
                    f"round {round_}: {name}: cold {cold[0]:.2f} s ({cold[1]:.2f} s CPU), "
                    f"warm {warm[0]:.2f} s ({warm[1]:.2f} s CPU)"
                )


if __name__ == "__main__":
    main()
