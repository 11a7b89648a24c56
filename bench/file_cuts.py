"""Benchmark: what storing attachments in the Java service's 1 MiB cuts costs in stored bytes.

The workload of ``bench/peers.py`` (process instances whose snapshots carry attachments
forward, edit a text report slightly at some steps, add new ones), imported into the
embedded store once with ``ARCHIVE_FILE_CUTS=content`` and once with ``java``, in two
rounds (the order swapped); then ``stats --full`` counts pieces and stored bytes.

    .venv/bin/python bench/file_cuts.py [--instances 20]

Not a test: figures depend on the machine. Results go to bench/README.md ("Files in the
Java service's cuts").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import folder_bytes, generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="file-cuts-"))
    try:
        inputs = work / "in"
        inputs.mkdir()
        info = generate(inputs, args.instances, 1.0, args.seed)
        print(f"workload: {info}")
        for number, order in enumerate((("content", "java"), ("java", "content"))):
            for cuts in order:
                store = work / f"store-{cuts}-{number}"
                env = {**os.environ, "ARCHIVE_FILE_CUTS": cuts}
                command = [sys.executable, "-m", "imixs_archive"]
                started = time.perf_counter()
                subprocess.run(
                    [*command, "import", str(inputs), "--data-dir", str(store)],
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                seconds = time.perf_counter() - started
                stats = json.loads(
                    subprocess.run(
                        [*command, "stats", "--full", "--json", "--data-dir", str(store)],
                        env=env,
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                )
                print(
                    f"round {number + 1} {cuts}: import {seconds:.1f} s, "
                    f"{stats['pieces']} pieces, {stats['stored_bytes']:,} bytes stored "
                    f"({stats['logical_bytes']:,} logical), store folder "
                    f"{folder_bytes(store):,} bytes"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
