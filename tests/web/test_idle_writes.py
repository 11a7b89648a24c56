"""An idle ``serve`` writes nothing: its loops (the ledger's rounds above all, every 5 s by
default) read, find nothing to do and leave the store alone. It grew its write-ahead log
by 13 MB in 40 minutes beside 4 MiB of data, rewriting the ledger's lease every round
(issue 46, item 6). Bytes written are counted by the kernel (``wchar`` of
``/proc/<pid>/io``: every write call, whatever the file system), with the ledger's round
every 0.1 s."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from imixs_archive.cli import main
from imixs_archive.document.xml_writer import to_xml
from support.snapshots import make_snapshot
from web.live import serve_process

PAGE = 32768
"""The store's page: any commit writes at least one to the write-ahead log."""


def _written(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc/<pid>/io")
def test_an_idle_serve_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    for n in range(5):
        (tmp_path / f"s{n}.xml").write_bytes(to_xml(make_snapshot(n, files={"a": b"x" * 900})))
    assert main(["import", str(tmp_path), "--data-dir", str(store)]) == 0
    env = {
        "ARCHIVE_DATA_DIR": str(store),
        "ARCHIVE_LEDGER_INTERVAL": "0.1",
        "ARCHIVE_LEDGER_CHECKPOINT_SECONDS": "1",
        "ARCHIVE_LOG_LEVEL": "WARNING",
        "ARCHIVE_ACCESS_LOG": "false",
    }
    process, url = serve_process(env)
    try:
        deadline = time.monotonic() + 60
        while not httpx.get(f"{url}/api/ledger", timeout=10).json().get("checkpoint_size"):
            assert time.monotonic() < deadline, "the imported entries were never signed"
            time.sleep(0.2)
        time.sleep(2)  # the round that signed them ends
        before = _written(process.pid)
        time.sleep(10)  # 100 rounds of the ledger
        written = _written(process.pid) - before
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert written < PAGE, f"{written} bytes written by an idle serve in 10 s"
