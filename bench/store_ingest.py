"""Benchmark of the archive on the embedded store: ingest, read-back, deduplication, memory.

A realistic workload: process instances, each with several snapshots (one per workflow
step), 8-16 KB of metadata, attachments of 50 KB to 5 MB carried forward from snapshot to
snapshot, new attachments added over time, and a text attachment edited slightly between
snapshots. In the same run it measures the raw disk write rate (write + fsync of the same
number of bytes) as the baseline.

    .venv/bin/python bench/store_ingest.py                # the recorded run
    .venv/bin/python bench/store_ingest.py --instances 5  # a quick one
    .venv/bin/python bench/store_ingest.py --big-mb 1024  # also a 1 GB snapshot, RSS checked

Not a test: figures depend on the machine. Results go to bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import BinaryStream, Document
from imixs_archive.document.xml_writer import iter_xml, write_xml
from imixs_archive.services.importer import import_sources
from imixs_archive.services.sources import find_sources
from imixs_archive.storage.sqlite.backend import SQLiteBackend, Tuning

MB = 1024 * 1024
BASE = 1_700_000_000_000


def metadata(rng: random.Random, size: int) -> dict[str, Any]:
    words = ["invoice", "approved", "pending", "customer", "order", "amount", "review"]
    items: dict[str, Any] = {}
    while sum(len(str(v)) for v in items.values()) < size:
        items[f"txt{len(items)}"] = " ".join(rng.choice(words) for _ in range(40))
    return items


def text_file(rng: random.Random, size: int) -> bytes:
    lines = [
        f"{i:08d} {rng.getrandbits(64):016x} the quick brown fox\n".encode()
        for i in range(size // 45)
    ]
    return b"".join(lines)[:size]


def snapshot(origin: str, step: int, files: dict[str, bytes], meta: dict[str, Any]) -> Document:
    millis = BASE + step * 3_600_000
    doc = Document(
        {
            "$uniqueid": f"{origin}-{millis}",
            "$modified": dt.datetime.fromtimestamp(millis / 1000, dt.UTC),
            "$created": dt.datetime.fromtimestamp(BASE / 1000, dt.UTC),
            "type": "snapshot-workitem",
            "$taskid": 1000 + step * 10,
            **meta,
        }
    )
    doc["$file"] = [{name: ["application/octet-stream", data, {}] for name, data in files.items()}]
    return doc


def generate(folder: Path, instances: int, steps: int, seed: int) -> dict[str, int]:
    """Write the workload as one XML file per snapshot; return byte counts."""
    rng = random.Random(seed)
    xml_bytes = 0
    for instance in range(instances):
        origin = f"{instance:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        files = {f"scan-{i}.pdf": rng.randbytes(rng.randint(50_000, 5 * MB)) for i in range(2)}
        if instance % 4 == 0:
            files["contract.txt"] = text_file(rng, 10 * MB if instance == 0 else 2 * MB)
        for step in range(steps):
            if step and rng.random() < 0.3:
                files[f"added-{step}.pdf"] = rng.randbytes(rng.randint(50_000, 2 * MB))
            if step and "contract.txt" in files:
                text = bytearray(files["contract.txt"])
                at = rng.randrange(len(text) - 100)
                text[at : at + 20] = b"EDITED-%05d-EDITED!" % step
                files["contract.txt"] = bytes(text)
            doc = snapshot(origin, step, files, metadata(rng, rng.randint(8_000, 16_000)))
            path = folder / f"{origin}-{step}.xml"
            with path.open("wb") as out:
                xml_bytes += write_xml(doc, out)
    return {"xml_bytes": xml_bytes}


def raw_disk_rate(folder: Path, total: int) -> float:
    block = os.urandom(4 * MB)
    path = folder / "raw.bin"
    started = time.perf_counter()
    with path.open("wb") as out:
        written = 0
        while written < total:
            out.write(block)
            written += len(block)
        out.flush()
        os.fsync(out.fileno())
    elapsed = time.perf_counter() - started
    path.unlink()
    return written / elapsed


def edit_cost(folder: Path) -> tuple[float, float]:
    """New bytes stored for (an unchanged 5 MB attachment, a small edit of a 10 MB text)."""
    rng = random.Random(99)
    pdf, text = rng.randbytes(5 * MB), text_file(rng, 10 * MB)
    edited = bytearray(text)
    edited[4 * MB : 4 * MB + 12] = b"a small edit"
    with SQLiteBackend(folder / "edit-store") as backend:
        archive = Archive(backend)
        archive.store(
            snapshot("aaaaaaaa-0000-4000-8000-000000000000", 0, {"a": pdf, "t": text}, {})
        )
        same = archive.store(snapshot("aaaaaaaa-0000-4000-8000-000000000000", 1, {"a": pdf}, {}))
        edit = archive.store(
            snapshot("aaaaaaaa-0000-4000-8000-000000000000", 2, {"t": bytes(edited)}, {})
        )
    return same.new_bytes / len(pdf), edit.new_bytes / len(text)


class Generated(BinaryStream):
    """Pseudo-random bytes generated on the fly (never held whole)."""

    def __init__(self, size: int) -> None:
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    def iter_bytes(self) -> Iterator[bytes]:
        rng = random.Random(1)
        left = self._size
        while left:
            piece = rng.randbytes(min(MB, left))
            left -= len(piece)
            yield piece


def big_snapshot(folder: Path, size_mb: int) -> dict[str, float]:
    """Archive one snapshot with a size_mb attachment in a child process; its peak RSS."""
    path = folder / "big.xml"
    doc = snapshot("bbbbbbbb-0000-4000-8000-000000000000", 0, {}, {})
    doc["$file"] = [{"big.bin": ["application/octet-stream", Generated(size_mb * MB), {}]}]
    with path.open("wb") as out:
        for piece in iter_xml(doc):
            out.write(piece)
    command = [
        sys.executable,
        "-m",
        "imixs_archive",
        "import",
        str(path),
        "--data-dir",
        str(folder / "big-store"),
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"xml_mb": path.stat().st_size / MB, "seconds": elapsed, "child_peak_rss_mb": rss_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--big-mb", type=int, default=0, help="also a snapshot this large")
    parser.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp dir)")
    parser.add_argument(
        "--no-pack", action="store_true", help="pieces stored as given, not zstd-packed"
    )
    args = parser.parse_args()
    tuning = Tuning(pack_level=None) if args.no_pack else Tuning()
    work = Path(tempfile.mkdtemp(prefix="imixs-bench-", dir=args.dir))
    try:
        inputs = work / "in"
        inputs.mkdir()
        sizes = generate(inputs, args.instances, args.steps, args.seed)
        sources = find_sources([str(inputs)])
        with SQLiteBackend(work / "store", tuning) as backend:
            archive = Archive(backend)
            started = time.perf_counter()
            summary = import_sources(archive, sources)
            ingest_s = time.perf_counter() - started
            started = time.perf_counter()
            read = 0
            for snapshot_id in list(archive.index.iter_snapshot_ids()):
                for piece in iter_xml(archive.load(snapshot_id)):
                    read += len(piece)
            read_s = time.perf_counter() - started
        raw = raw_disk_rate(work, sizes["xml_bytes"])
        unchanged, edited = edit_cost(work)
        ingest_rate = sizes["xml_bytes"] / ingest_s
        print(f"snapshots: {summary.new} ({summary.failed} failed)")
        print(f"snapshot XML: {sizes['xml_bytes'] / MB:.0f} MB")
        print(f"ingest: {ingest_rate / MB:.1f} MB/s, {summary.new / ingest_s:.1f} snapshots/s")
        print(f"raw disk write+fsync: {raw / MB:.1f} MB/s; ingest/raw = {ingest_rate / raw:.2f}")
        print(f"read-back (XML with files merged): {read / read_s / MB:.1f} MB/s")
        print(
            f"attachments: logical {summary.logical_bytes / MB:.0f} MB, "
            f"stored {summary.new_bytes / MB:.0f} MB "
            f"(ratio {summary.logical_bytes / max(1, summary.new_bytes):.2f})"
        )
        print(f"unchanged 5 MB attachment stores again: {unchanged:.2%}")
        print(f"small edit in a 10 MB text stores again: {edited:.2%}")
        print(
            f"peak RSS of this process: "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
        )
        if args.big_mb:
            big = big_snapshot(work, args.big_mb)
            print(
                f"big snapshot: {big['xml_mb']:.0f} MB XML archived in {big['seconds']:.1f} s "
                f"({big['xml_mb'] / big['seconds']:.0f} MB/s), "
                f"peak RSS of the import process {big['child_peak_rss_mb']:.0f} MB"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
