"""Bytes written to disk by an import and by an idle ``serve`` (issue 46, item 6).

On a store in ``--dir`` (on a disk: ``write_bytes`` of ``/proc/<pid>/io`` counts what
reaches the block layer, nothing on a tmpfs), the demo month (``scripts/demo_month.py``,
143 snapshots, 8.6 MB of XML) is imported by ``imixs-archive import`` in a process of its
own; then ``serve`` runs on that store, and after ``--settle`` seconds (its first rounds:
the ledger logs what the import queued) the bytes it writes in ``--seconds`` are counted,
with the sizes of the database file and its write-ahead log.

    .venv/bin/python bench/idle_writes.py [--seconds 180] [--settle 15] [--dir /var/tmp]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "scripts" / "demo_month.py"
IMPORT = (
    "import sys; from imixs_archive.cli import main; code = main(sys.argv[1:]); "
    "print(open('/proc/self/io').read(), flush=True); sys.exit(code)"
)


def _io(text: str) -> dict[str, int]:
    pairs = (line.split(": ") for line in text.splitlines() if ": " in line)
    return {name: int(value) for name, value in pairs if value.isdigit()}


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _import(store: Path, demo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, "import", str(demo), "--data-dir", str(store)],
        capture_output=True,
        text=True,
        check=True,
    )
    written = _io(done.stdout)["write_bytes"]
    size = demo.stat().st_size
    print(
        f"import: {size:,} B of XML, {written:,} B written ({written / size:.1f} x); "
        f"database {_size(store / 'archive.db'):,} B"
    )


def _idle(store: Path, settle: float, seconds: float) -> None:
    env = {**os.environ, "ARCHIVE_DATA_DIR": str(store)}
    env.pop("ARCHIVE_HTTP_HOST", None)
    serve = subprocess.Popen(
        [sys.executable, "-m", "imixs_archive", "serve", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    io = Path(f"/proc/{serve.pid}/io")
    try:
        assert serve.stdout is not None
        serve.stdout.readline()
        time.sleep(settle)
        first = _io(io.read_text())["write_bytes"]
        began = time.monotonic()
        wal = store / "archive.db-wal"
        print(f"serve after {settle:.0f} s: write-ahead log {_size(wal):,} B")
        while (elapsed := time.monotonic() - began) < seconds:
            time.sleep(min(60.0, seconds - elapsed))
            written = _io(io.read_text())["write_bytes"] - first
            print(
                f"  idle {time.monotonic() - began:5.0f} s: {written:,} B written; "
                f"database {_size(store / 'archive.db'):,} B, write-ahead log {_size(wal):,} B"
            )
    finally:
        serve.terminate()
        serve.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--dir", default="/var/tmp", help="a folder on a disk (not a tmpfs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        demo = Path(tmp) / "demo.xml"
        made = subprocess.run([sys.executable, str(DEMO)], capture_output=True, check=True)
        demo.write_bytes(made.stdout)
        store = Path(tmp) / "store"
        _import(store, demo)
        _idle(store, args.settle, args.seconds)


if __name__ == "__main__":
    main()
