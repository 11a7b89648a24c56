"""Benchmark of the sync from the real Imixs-Workflow engine (``scripts/imixs-workflow``).

Two workloads, each written into the engine over its REST API (tickets created and moved,
as a business application does) and then synced into a fresh embedded (SQLite) store by
``SyncService``'s loop until the engine's event log is empty:

* small: ``--small`` snapshots with a 200-byte attachment each;
* large: ``--large`` snapshots with one incompressible attachment of ``--large-mb`` MB.

Printed per workload: what the engine spent writing the snapshots (wall time, its JVM's
CPU), then the sync's rate (snapshots/s, MB/s of attachments), the sync process's CPU and
the engine's CPU while it served the sync (read from ``/proc`` of the engine's process,
so other work on the engine would count too: run it on an idle engine). Events left in the
log by others are synced away (not timed) before each workload. The catch-up is off: the
event path is measured.

    scripts/imixs-workflow start --server-jit
    .venv/bin/python bench/engine_sync.py                          # the recorded run
    .venv/bin/python bench/engine_sync.py --small 100 --large 2 --large-mb 50

Not a test: figures depend on the machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.sync.service import SyncConfig, SyncService
from imixs_archive.workflow.auth import BasicAuth
from imixs_archive.workflow.client import WorkflowClient
from support.engine import ADMIN, Engine

HOME = Path(
    os.environ.get("IMIXS_WORKFLOW_HOME", Path.home() / ".cache/imixs-archive/imixs-workflow")
)
MB = 1024 * 1024


def engine_cpu() -> float:
    """CPU seconds (user and system) of the engine's JVM, from ``/proc``."""
    pid = int((HOME / "pid").read_text().strip())
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write(engine: Engine, count: int, size: int, users: int = 3) -> tuple[float, float]:
    """``count`` snapshots with a ``size``-byte attachment, written by ``users`` at once
    (each ticket created, then moved); (wall s, engine CPU s)."""
    rng = random.Random(size)
    payloads = [rng.randbytes(size) for _ in range(min(count, 8))]
    per_user = [count // users + (1 if n < count % users else 0) for n in range(users)]

    def work(n: int) -> None:
        user = ("admin", "alex", "marty")[n % 3]
        left = per_user[n]
        while left > 0:
            files = {"a.bin": payloads[left % len(payloads)]}
            ticket = engine.create(f"bench {n}", files, user=user)
            left -= 1
            if left > 0:
                engine.move(ticket, 10, user=user, note="moved")
                left -= 1

    cpu, started = engine_cpu(), time.monotonic()
    threads = [threading.Thread(target=work, args=(n,)) for n in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started, engine_cpu() - cpu


def sync(url: str, store: Path, workers: int) -> tuple[int, int, float, float, float]:
    """The sync loop into ``store`` until the event log is empty and no claim is left;
    (snapshots, attachment bytes, wall s, sync CPU s, engine CPU s)."""
    config = SyncConfig(
        interval_ms=10, initial_delay_ms=0, workers=workers, batch=200, catchup=False
    )
    with (
        SQLiteBackend(store) as backend,
        Archive(backend) as archive,
        WorkflowClient(url, auth=BasicAuth(*ADMIN), max_connections=workers + 2) as client,
    ):
        service = SyncService(archive, client, config)
        cpu, ecpu, started = time.process_time(), engine_cpu(), time.monotonic()
        thread = service.start()
        while client.read_events(max_count=1) or next(service.claims.all(), None) is not None:
            time.sleep(0.1)
        elapsed = time.monotonic() - started
        service.stop()
        thread.join()
        return (
            sum(1 for _ in archive.index.iter_snapshot_ids()),
            service.counters.bytes,
            elapsed,
            time.process_time() - cpu,
            engine_cpu() - ecpu,
        )


def run(args: argparse.Namespace, label: str, count: int, size: int, folder: Path) -> None:
    engine = Engine(args.url)
    sync(args.url, folder / f"{label}-before", args.workers)  # others' events: not timed
    wall, cpu = write(engine, count, size)
    print(
        f"{label}: {count} snapshots of {size / MB:.3g} MB written by the engine in "
        f"{wall:.1f} s ({count / wall:.1f}/s), engine CPU {cpu:.1f} s "
        f"({cpu / count * 1000:.0f} ms per snapshot)"
    )
    done, size_bytes, wall, cpu, ecpu = sync(args.url, folder / label, args.workers)
    print(
        f"  synced {done} snapshots in {wall:.1f} s: {done / wall:.1f} snapshots/s, "
        f"{size_bytes / MB / wall:.1f} MB/s; sync CPU {cpu / wall:.0%} of a core, "
        f"engine CPU {ecpu:.1f} s ({ecpu / max(done, 1) * 1000:.0f} ms per snapshot)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.environ.get("ARCHIVE_TEST_ENGINE", "http://127.0.0.1:8081/api")
    parser.add_argument("--url", default=default, help="the engine's API (%(default)s)")
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--large", type=int, default=8)
    parser.add_argument("--large-mb", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        if args.small:
            run(args, "small", args.small, 200, Path(folder))
        if args.large:
            run(args, "large", args.large, int(args.large_mb * MB), Path(folder))


if __name__ == "__main__":
    main()
