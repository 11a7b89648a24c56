"""``imixs-archive serve`` as a child process for the benchmarks: started on a free port
with the given settings, answered once its health check does."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx


def start_serve(
    settings: dict[str, str], tries: int = 400, open_files: int | None = None
) -> tuple[subprocess.Popen[str], str]:
    """The process and its URL; SystemExit when it does not start or answer.
    ``open_files``: its limit of open files (set by a shell that then becomes serve)."""
    command = [sys.executable, "-m", "imixs_archive", "serve", "--port", "0"]
    if open_files is not None:
        command = ["/bin/sh", "-c", f'ulimit -n {int(open_files)} && exec "$@"', "sh", *command]
    process = subprocess.Popen(
        command,
        env={**os.environ, **settings},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if "serving" not in line:
        process.kill()
        raise SystemExit(f"serve did not start: {line!r}")
    url = line.split()[2].rstrip("/")
    for _ in range(tries):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("serve did not answer")
