"""Peak memory of ``serve`` while it receives pushes of one huge string item.

A push (``POST /api/archive/snapshot``) of a snapshot whose one text item holds ``--mb``
MB, as JSON and as XML (the XML path streams: the baseline, in the same run), one at a
time and ``--parallel`` at once. The value is over the reader's limit (64 Mi characters),
so each push is refused with a 400: what is measured is what the server held meanwhile,
its peak RSS (``VmHWM``) over a fresh ``serve`` per case.

    .venv/bin/python bench/push_memory.py              # the recorded run: 300 MB, 1 and 4
    .venv/bin/python bench/push_memory.py --mb 100     # a quicker one

Not a test: figures depend on the machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from imixs_archive.document.json_codec import to_json
from imixs_archive.document.xml_writer import to_xml
from support.snapshots import make_snapshot

MB = 1024 * 1024
MARK = "PLACEHOLDER-FOR-THE-LONG-VALUE"


def payload(folder: Path, kind: str, megabytes: int) -> Path:
    """A snapshot whose item ``note`` holds ``megabytes`` MB of text, written piece by piece."""
    doc = make_snapshot(0, note=MARK)
    head, tail = (to_json(doc) if kind == "json" else to_xml(doc)).split(MARK.encode())
    path = folder / f"big.{kind}"
    with path.open("wb") as out:
        out.write(head)
        block = b"a" * MB
        for _ in range(megabytes):
            out.write(block)
        out.write(tail)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def measure(body: Path, kind: str, parallel: int) -> tuple[int, int, list[int]]:
    """(RSS before, peak RSS, statuses) of a fresh ``serve`` receiving ``parallel`` pushes."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        command = [sys.executable, "-m", "imixs_archive", "serve", "--data-dir", data]
        server = subprocess.Popen(
            [*command, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    httpx.get(f"{url}/healthz", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            before = peak_kib(server.pid)
            media = "application/json" if kind == "json" else "application/xml"

            def push(_n: int) -> int:
                with body.open("rb") as stream:
                    answer = httpx.post(
                        f"{url}/api/archive/snapshot",
                        content=stream,
                        headers={"Content-Type": media},
                        timeout=600,
                    )
                return answer.status_code

            with ThreadPoolExecutor(parallel) as pool:
                statuses = list(pool.map(push, range(parallel)))
            return before, peak_kib(server.pid), statuses
        finally:
            server.terminate()
            server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300, help="MB in the one text item")
    parser.add_argument("--parallel", type=int, default=4, help="pushes at once (second case)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for kind in ("json", "xml"):
            body = payload(Path(folder), kind, args.mb)
            for parallel in sorted({1, args.parallel}):
                before, peak, statuses = measure(body, kind, parallel)
                print(
                    f"{kind:4} {args.mb} MB x{parallel}: RSS before {before / 1024:.0f} MiB, "
                    f"peak {peak / 1024:.0f} MiB; answers {sorted(set(statuses))}",
                    flush=True,
                )
            os.unlink(body)


if __name__ == "__main__":
    main()
