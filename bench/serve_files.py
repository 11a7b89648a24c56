"""Open files and memory of ``serve`` over a long run of analytics calls, then under half-sent
requests (issue 48: a Monitor page left open two hours used up 1,024 descriptors).

Not a test: it prints figures. What it does:

1. builds an embedded store in a temp dir: the bundled samples, three snapshots with a
   3 MiB attachment, and snapshots of the last four days (counted again on every call);
2. starts ``imixs-archive serve`` as a child process under ``ulimit -n --open-files``;
3. ``--clients`` threads call what the Monitor and Statistics pages show, and the
   analytics endpoints they link, ``--calls`` times in all; every ``--every`` calls it
   prints the process's open files (``/proc/<pid>/fd``), RSS and threads;
4. opens ``--half-sent`` sockets that send part of a request's head and stall, times a
   normal call meanwhile, and how long the service takes to close them all
   (``ARCHIVE_HTTP_HEADER_TIMEOUT``, ``--header-timeout``).

    .venv/bin/python bench/serve_files.py                       # 10,000 calls, 4 clients
    .venv/bin/python bench/serve_files.py --calls 2000 --half-sent 300   # quick run
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from imixs_archive.archive.snapshots import Archive  # noqa: E402
from imixs_archive.storage.sqlite.backend import SQLiteBackend  # noqa: E402
from lib.serving import start_serve  # noqa: E402
from web.live import analytics_calls, seed, seed_recent  # noqa: E402


def figures(pid: int) -> tuple[int, float, int]:
    """Open files, RSS in MiB, threads of the process."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024
    threads = next(int(line.split()[1]) for line in status if line.startswith("Threads:"))
    return len(os.listdir(f"/proc/{pid}/fd")), rss, threads


def calls(url: str, count: int, clients: int, every: int, pid: int) -> list[str]:
    """``count`` calls from ``clients`` threads; prints a line every ``every`` calls."""
    paths, done, failures = analytics_calls(), [0], []
    lock = threading.Lock()
    began = time.monotonic()

    def client() -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            while True:
                with lock:
                    if done[0] >= count:
                        return
                    number = done[0]
                    done[0] += 1
                path = paths[number % len(paths)]
                try:
                    answer = http.get(path)
                    if answer.status_code != 200:
                        failures.append(f"{path}: {answer.status_code}")
                except httpx.HTTPError as exc:
                    failures.append(f"{path}: {type(exc).__name__}")
                if (number + 1) % every == 0:
                    files, rss, threads = figures(pid)
                    elapsed = time.monotonic() - began
                    print(f"{number + 1:>8}{files:>8}{rss:>10.1f}{threads:>9}{elapsed:>10.1f}")

    print(f"{'calls':>8}{'files':>8}{'RSS MiB':>10}{'threads':>9}{'seconds':>10}")
    files, rss, threads = figures(pid)
    print(f"{0:>8}{files:>8}{rss:>10.1f}{threads:>9}{0.0:>10.1f}")
    workers = [threading.Thread(target=client) for _ in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return failures


def half_sent(url: str, count: int, pid: int) -> None:
    host, port = url.removeprefix("http://").split(":")
    files = figures(pid)[0]
    stalled = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(b"GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */")
        stalled.append(sock)
    opened = time.monotonic()
    held = figures(pid)[0]
    start = time.perf_counter()
    status = httpx.get(f"{url}/api/stats", timeout=60).status_code
    answered = time.perf_counter() - start
    time.sleep(max(0.0, 1 - (time.monotonic() - opened)))
    settled = figures(pid)[0]  # a second after: the connections beyond the limit closed
    while figures(pid)[0] > files + 2 and time.monotonic() - opened < 300:
        time.sleep(0.1)
    closed = time.monotonic() - opened
    for sock in stalled:
        sock.close()
    print(
        f"{count} half-sent requests: open files {files} -> {held}, {settled} a second "
        f"after they were opened; a normal call meanwhile "
        f"{status} in {answered * 1000:.0f} ms; all closed {closed:.1f} s after they were "
        f"opened (open files {figures(pid)[0]})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--open-files", type=int, default=1024)
    parser.add_argument("--half-sent", type=int, default=1000)
    parser.add_argument("--header-timeout", default="10s")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-files-") as tmp:
        folder = Path(tmp) / "store"
        with SQLiteBackend(folder) as backend:
            archive = Archive(backend)
            seed(archive)
            seed_recent(archive)
        settings = {
            "ARCHIVE_DATA_DIR": str(folder),
            "ARCHIVE_ACCESS_LOG": "false",
            "ARCHIVE_HTTP_HEADER_TIMEOUT": args.header_timeout,
        }
        process, url = start_serve(settings, open_files=args.open_files)
        try:
            failures = calls(url, args.calls, args.clients, args.every, process.pid)
            print(f"failed calls: {len(failures)} {failures[:5]}")
            if args.half_sent:
                half_sent(url, args.half_sent, process.pid)
        finally:
            process.terminate()
            process.wait(60)
        return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
