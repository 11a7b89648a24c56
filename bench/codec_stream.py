"""Benchmark: stream a ~1 GB snapshot XML with a 700 MB attachment through the codec.

    .venv/bin/python bench/codec_stream.py [--size-mb 700] [--dir /tmp] [--keep]

Three phases, each in its own child process so that its peak RSS is its own:

1. generate: write the snapshot XML to a temp dir with ``write_xml``: normal items plus a
   ``$file`` map with the big attachment (``--size-mb`` MB) and a second one (5 % of it),
   both produced by a ``BinaryStream`` that regenerates deterministic bytes piece by piece.
2. parse: ``iter_xml_documents`` over the file with a sink that MD5-hashes the pieces;
   reports MB/s of XML parsed and decoded, and checks the MD5s.
3. write: parse again (not timed) with a sink whose ``close()`` returns a regenerating
   ``BinaryStream``, then ``write_xml`` the document back out (timed); the output must be
   byte-identical to the generated file.

Peak RSS is ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of each child.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
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

from imixs_archive.document.model import BinaryStream, Document, Long
from imixs_archive.document.xml_reader import iter_xml_documents
from imixs_archive.document.xml_writer import write_xml

MB = 1_000_000
PIECE = 2**20
BIG_NAME = "Scan-2024-Q3 Großarchiv.BIN"
SMALL_NAME = "notes.pdf"


class GeneratedStream(BinaryStream):
    """Deterministic pseudo-random bytes, made piece by piece (never held whole)."""

    def __init__(self, size: int, seed: int) -> None:
        self._size = size
        self._block = random.Random(seed).randbytes(PIECE)

    @property
    def size(self) -> int:
        return self._size

    def iter_bytes(self) -> Iterator[bytes]:
        for index, start in enumerate(range(0, self._size, PIECE)):
            piece = index.to_bytes(8, "big") + self._block[8:]
            yield piece[: min(PIECE, self._size - start)]


def stream_md5(stream: BinaryStream) -> str:
    digest = hashlib.md5()
    for piece in stream.iter_bytes():
        digest.update(piece)
    return digest.hexdigest().upper()


def make_document(big: BinaryStream, small: BinaryStream) -> Document:
    doc = Document()
    created = dt.datetime(2024, 9, 30, 12, 0, 0, 123000, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    doc["$uniqueid"] = "270e3a6d-a0e4-4875-89f1-3b418859abe5-1727690400123"
    doc["$created"] = doc["$modified"] = created
    doc["type"] = "snapshot-workitem"
    for i in range(2000):  # "normal" items: strings, numbers, dates, lists
        doc[f"txtfield{i:04d}"] = [f"value {i} – <escaped> & kept", f"second {i}"]
        doc[f"numfield{i:04d}"] = [i, Long(i * 10**10), i / 7]
        doc[f"datfield{i:04d}"] = created + dt.timedelta(minutes=i)
    files = {}
    for name, stream, kind in (
        (BIG_NAME, big, "application/octet-stream"),
        (SMALL_NAME, small, "application/pdf"),
    ):
        assert stream.size is not None
        attributes = {"md5checksum": [stream_md5(stream)], "size": [Long(stream.size)]}
        files[name] = [kind, stream, attributes]
    doc["$file"] = files
    doc["$file.count"] = len(files)
    doc["$file.names"] = list(files)
    return doc


def streams(size_mb: int) -> tuple[GeneratedStream, GeneratedStream]:
    return GeneratedStream(size_mb * MB, 1), GeneratedStream(size_mb * MB // 20, 2)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class Clock:
    """Wall time and CPU time (user + system) of this process."""

    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    def stop(self) -> dict[str, float]:
        return {
            "seconds": time.perf_counter() - self._wall,
            "cpu_seconds": time.process_time() - self._cpu,
        }


# -- phases (each runs in a child process) ---------------------------------------------------


class Md5Sink:
    def __init__(self, name: str, results: dict[str, Any]) -> None:
        self._name = name
        self._digest = hashlib.md5()
        self._size = 0
        self._results = results

    def write(self, piece: bytes) -> None:
        self._digest.update(piece)
        self._size += len(piece)

    def close(self) -> Any:
        self._results[self._name] = (self._digest.hexdigest().upper(), self._size)
        return self._results[self._name]

    def abort(self) -> None:
        self._results.pop(self._name, None)


def phase_generate(path: Path, size_mb: int) -> dict[str, Any]:
    doc = make_document(*streams(size_mb))
    clock = Clock()
    with path.open("wb") as out:
        written = write_xml(doc, out)
    return {"bytes": written, **clock.stop()}


def phase_parse(path: Path, size_mb: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    clock = Clock()
    with path.open("rb") as source:
        docs = list(iter_xml_documents(source, file_sink=lambda n: Md5Sink(n, results)))
    timing = clock.stop()
    (doc,) = docs
    for name, values in doc["$file"][0].items():
        claimed = values[2]["md5checksum"][0]
        if results[name][0] != claimed:
            raise SystemExit(f"MD5 mismatch for {name}: {results[name][0]} != {claimed}")
    decoded = sum(size for _, size in results.values())
    return {"bytes": path.stat().st_size, "decoded": decoded, "items": len(doc), **timing}


def phase_write(path: Path, size_mb: int) -> dict[str, Any]:
    big, small = streams(size_mb)
    by_name = {BIG_NAME: big, SMALL_NAME: small}

    class RegenerateSink(Md5Sink):
        def close(self) -> Any:
            super().close()
            return by_name[self._name]  # the attachment, re-read (regenerated) on write

    results: dict[str, Any] = {}
    with path.open("rb") as source:
        (doc,) = iter_xml_documents(source, file_sink=lambda n: RegenerateSink(n, results))
    output = path.with_suffix(".out.xml")
    clock = Clock()
    with output.open("wb") as out:
        written = write_xml(doc, out)
    timing = clock.stop()
    identical = _file_md5(output) == _file_md5(path)
    output.unlink()
    return {"bytes": written, "identical": identical, **timing}


def _file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as source:
        while block := source.read(PIECE):
            digest.update(block)
    return digest.hexdigest()


PHASES = {"generate": phase_generate, "parse": phase_parse, "write": phase_write}


def run_child(phase: str, path: Path, size_mb: int) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--phase",
        phase,
        "--file",
        str(path),
        "--size-mb",
        str(size_mb),
    ]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def report(phase: str, result: dict[str, Any]) -> str:
    size = result["bytes"] / MB
    wall, cpu = result["seconds"], result["cpu_seconds"]
    line = (
        f"{phase:8} {size:7.1f} MB XML: {wall:6.2f} s wall = {size / wall:5.1f} MB/s,"
        f" {cpu:6.2f} s CPU = {size / cpu:5.1f} MB/s per core"
    )
    if phase == "parse":
        line += f" ({result['decoded'] / MB / cpu:.0f} MB/s decoded)"
    if phase == "write":
        line += f", byte-identical to the input: {result['identical']}"
    return line + f"; peak RSS {result['peak_rss_mb']:.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=700, help="attachment size in MB (1e6)")
    parser.add_argument("--dir", default="/tmp", help="where the temp dir is made")
    parser.add_argument("--keep", action="store_true", help="keep the generated XML")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:  # child: run one phase, print its figures as JSON
        result = PHASES[args.phase](Path(args.file), args.size_mb)
        result["peak_rss_mb"] = round(peak_rss_mb(), 1)
        print(json.dumps(result))
        return
    workdir = Path(tempfile.mkdtemp(prefix="codec_stream-", dir=args.dir))
    path = workdir / "snapshot.xml"
    try:
        print(f"attachment {args.size_mb} MB (+{args.size_mb // 20} MB), files in {workdir}")
        for phase in ("generate", "parse", "write"):
            result = run_child(phase, path, args.size_mb)
            print(report(phase, result))
    finally:
        if args.keep:
            print(f"kept {path}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
