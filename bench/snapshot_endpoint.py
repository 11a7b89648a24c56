"""The Java-compatible ``GET /api/archive/snapshot/{id}`` as XML: the stored XML passed
through (files spliced in, wrapped in ``<data>``: ``web/streaming.py:in_data``) against
the snapshot parsed and written again (the way the endpoint answered before, and still
answers JSON and HTML). The CPU of one answer's body, in this process, without HTTP.

Not a test: it prints figures. Pairs of ``--calls`` calls each way, in turn; the ratio
pair by pair.

    .venv/bin/python bench/snapshot_endpoint.py
    .venv/bin/python bench/snapshot_endpoint.py --items 400 --file-kb 2000
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from imixs_archive.archive.snapshots import Archive  # noqa: E402
from imixs_archive.document.xml_writer import iter_xml  # noqa: E402
from imixs_archive.storage.sqlite.backend import SQLiteBackend  # noqa: E402
from imixs_archive.web.streaming import in_data  # noqa: E402
from support.snapshots import make_snapshot  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=120, help="text items of 64 characters")
    parser.add_argument("--file-kb", type=int, default=200, help="one attachment this large")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    items = {f"txt_item{i}": ["some text value " * 4] for i in range(args.items)}
    content = random.Random(1).randbytes(args.file_kb * 1024)
    doc = make_snapshot(1, files={"a.pdf": content}, **items)
    sid = str(doc.get_first("$uniqueid"))
    with tempfile.TemporaryDirectory() as folder, SQLiteBackend(Path(folder)) as backend:
        archive = Archive(backend)
        archive.store(doc)

        def parsed() -> int:
            answer = iter_xml(archive.load(sid, with_files=True), collection=True)
            return sum(len(piece) for piece in answer)

        def passed_through() -> int:
            answer = in_data(archive.xml_with_files(sid).iter_bytes())
            assert answer is not None, "the stored XML was not passed through"
            return sum(len(piece) for piece in answer)

        print(f"answer: {parsed():,} bytes parsed and written, {passed_through():,} passed")
        ratios, times = [], []
        for _ in range(args.pairs):
            start = time.perf_counter()
            for _ in range(args.calls):
                parsed()
            middle = time.perf_counter()
            for _ in range(args.calls):
                passed_through()
            end = time.perf_counter()
            ratios.append((middle - start) / (end - middle))
            times.append(((middle - start) / args.calls, (end - middle) / args.calls))
        archive.close()
    best = min(times, key=lambda pair: pair[1])
    print(
        f"parsed / passed through, pair by pair: median {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f}); fastest pair "
        f"{best[0] * 1000:.2f} ms against {best[1] * 1000:.2f} ms a call"
    )


if __name__ == "__main__":
    main()
