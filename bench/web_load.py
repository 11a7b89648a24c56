"""Load on the archive service over loopback: concurrent readers while the sync loop ingests.

Not a test: it prints figures. What it does:

1. builds an embedded store in a temp dir with ``--snapshots`` snapshots (attachments of
   ``--file-kb`` KiB, some shared) plus the bundled samples;
2. starts the workflow test double (tests/support) and ``imixs-archive serve`` as a child
   process with the double as ``WORKFLOW_SERVICE_ENDPOINT`` (the sync loop runs);
3. a feeder saves new workitems with attachments into the double all along, so the sync
   loop keeps archiving;
4. ``--clients`` threads read for ``--seconds``: a snapshot as XML with its files, one
   attachment, a range of one, an instance listing (API tokens, as a script would);
5. prints requests/s, p50/p99 latency per kind and overall, failures, and what the sync
   loop archived meanwhile.

    .venv/bin/python bench/web_load.py                 # 16 clients, 20 s
    .venv/bin/python bench/web_load.py --clients 32 --seconds 60
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from imixs_archive.archive.snapshots import Archive  # noqa: E402
from imixs_archive.services.importer import import_sources  # noqa: E402
from imixs_archive.services.sources import find_sources  # noqa: E402
from imixs_archive.storage.sqlite.backend import SQLiteBackend  # noqa: E402
from imixs_archive.web.credentials import token_hash  # noqa: E402
from support.snapshots import make_snapshot  # noqa: E402
from support.workflow_double import WorkflowDouble  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from lib.serving import start_serve  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"


def build_store(folder: Path, count: int, file_kb: int) -> list[tuple[str, str]]:
    """(snapshot id, attachment name) of what the readers will ask for."""
    rng = random.Random(7)
    shared = rng.randbytes(file_kb * 1024)
    targets: list[tuple[str, str]] = []
    with SQLiteBackend(folder) as backend:
        archive = Archive(backend)
        import_sources(archive, find_sources([str(ROOT / "samples")]))
        for number in range(count):
            origin = f"{number:08x}-0000-4000-8000-{number:012x}"
            own = rng.randbytes(file_kb * 1024)
            doc = make_snapshot(
                number % 50, origin=origin, files={"own.bin": own, "shared.bin": shared}
            )
            archive.store(doc)
            targets.append((str(doc.get_first("$uniqueid")), "own.bin"))
    return targets


def start_service(folder: Path, workflow_url: str) -> tuple[subprocess.Popen[str], str]:
    return start_serve(
        {
            "ARCHIVE_DATA_DIR": str(folder),
            "ARCHIVE_API_TOKENS": f"bench:manager:{token_hash(TOKEN)}",
            "WORKFLOW_SERVICE_ENDPOINT": workflow_url,
            "WORKFLOW_SYNC_INITIALDELAY": "0",
            "WORKFLOW_SYNC_INTERVAL": "200",
        },
        tries=200,
    )


def feed(double: WorkflowDouble, stop: threading.Event, file_kb: int, saved: list[int]) -> None:
    rng = random.Random(11)
    while not stop.is_set():
        double.save(subject="load", files={"scan.pdf": rng.randbytes(file_kb * 1024)})
        saved[0] += 1
        stop.wait(0.02)


def read(
    url: str,
    targets: list[tuple[str, str]],
    deadline: float,
    seed: int,
    samples: dict[str, list[float]],
    failures: list[str],
) -> None:
    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        while time.monotonic() < deadline:
            snapshot_id, name = rng.choice(targets)
            kind = rng.choice(["snapshot", "file", "range", "listing"])
            path = {
                "snapshot": f"/api/archive/snapshot/{snapshot_id}",
                "file": f"/api/archive/snapshot/{snapshot_id}/file/{name}",
                "range": f"/api/archive/snapshot/{snapshot_id}/file/{name}",
                "listing": f"/api/archive/instances/{snapshot_id.rsplit('-', 1)[0]}/snapshots",
            }[kind]
            extra = {"Range": "bytes=1000-50999"} if kind == "range" else {}
            start = time.perf_counter()
            try:
                answer = client.get(path, headers=extra)
                _ = answer.content
                ok = answer.status_code in (200, 206)
                if ok and kind == "file":
                    ok = len(answer.content) == int(answer.headers["content-length"])
            except httpx.HTTPError as exc:
                failures.append(f"{kind}: {type(exc).__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - start
            if not ok:
                failures.append(f"{kind} {path}: {answer.status_code}")
            samples[kind].append(elapsed)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(samples: dict[str, list[float]], seconds: float, failures: list[str]) -> None:
    every = [v for values in samples.values() for v in values]
    print(f"{'kind':<10}{'requests':>10}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for kind, values in [*sorted(samples.items()), ("all", every)]:
        if values:
            print(
                f"{kind:<10}{len(values):>10}{len(values) / seconds:>10.1f}"
                f"{statistics.median(values) * 1000:>10.1f}{percentile(values, 0.99) * 1000:>10.1f}"
            )
    print(f"failed requests: {len(failures)}")
    for failure in failures[:10]:
        print(f"  {failure}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--snapshots", type=int, default=300)
    parser.add_argument("--file-kb", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="web-load-") as tmp:
        folder = Path(tmp) / "store"
        targets = build_store(folder, args.snapshots, args.file_kb)
        with WorkflowDouble() as double:
            process, url = start_service(folder, double.url)
            stop, saved = threading.Event(), [0]
            feeder = threading.Thread(target=feed, args=(double, stop, args.file_kb, saved))
            feeder.start()
            samples: dict[str, list[float]] = defaultdict(list)
            failures: list[str] = []
            deadline = time.monotonic() + args.seconds
            readers = [
                threading.Thread(target=read, args=(url, targets, deadline, n, samples, failures))
                for n in range(args.clients)
            ]
            began = time.monotonic()
            for thread in readers:
                thread.start()
            for thread in readers:
                thread.join()
            elapsed = time.monotonic() - began
            stop.set()
            feeder.join()
            status = httpx.get(
                f"{url}/api/sync/status", headers={"Authorization": f"Bearer {TOKEN}"}
            ).json()
            process.terminate()
            process.wait(30)
        print(
            f"{args.clients} clients, {elapsed:.1f} s, {len(targets)} snapshots with "
            f"{args.file_kb} KiB attachments"
        )
        report(samples, elapsed, failures)
        counters = status.get("counters") or {}
        print(
            f"sync loop meanwhile: {saved[0]} workitems saved in the workflow, "
            f"{counters.get('archived', 0)} snapshots archived, {counters.get('failures', 0)} "
            f"failures, lag {status.get('lag_seconds')} s at the end"
        )
        return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
