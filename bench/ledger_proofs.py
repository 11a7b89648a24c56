"""What an inclusion and a consistency proof cost the store as the log grows: the ledger's
tree kept as tiles (``ledger/tiles.py``) is read a few tiles a proof, the same at 10^6
entries as at 10^4 but for one more level of tiles.

Builds a log's tiles of ``--sizes`` synthetic leaves in a fresh embedded store, grown in
rounds of 5,000 as the sequencer grows them, then makes ``--proofs`` inclusion proofs of random
entries and as many consistency proofs from random sizes, each with a reader of its own
(as a request has), counting the store's reads and timing them. Figures in
bench/README.md ("Proofs from tiles").
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

ROUND = 5000


def measure(size: int, proofs: int) -> dict[str, float]:
    from imixs_archive.ledger.books import LedgerBooks
    from imixs_archive.ledger.tiles import TileReader, extend_tiles
    from imixs_archive.ledger.tree import TreeState
    from imixs_archive.storage.sqlite.backend import SQLiteBackend
    from imixs_archive.tlog.merkle import consistency_proof, inclusion_proof, leaf_hash

    with tempfile.TemporaryDirectory() as folder, SQLiteBackend(Path(folder)) as backend:
        books = LedgerBooks(backend)
        built = 0
        started = time.perf_counter()
        while built < size:
            count = min(ROUND, size - built)
            leaves = [leaf_hash(str(i).encode()) for i in range(built, built + count)]
            built = extend_tiles(books, built, leaves)
        grow = time.perf_counter() - started
        head = dataclasses.replace(TreeState.empty("bench", "", 0), size=size, tiled=size)
        rng = random.Random(44)
        reads: list[int] = []
        times: list[float] = []
        original = books.tile

        def counted(level: int, idx: int) -> bytes | None:
            reads[-1] += 1
            return original(level, idx)

        books.tile = counted  # type: ignore[method-assign]
        for number in range(2 * proofs):
            reader = TileReader(books, head)
            reads.append(0)
            started = time.perf_counter()
            if number < proofs:
                inclusion_proof(rng.randrange(size), size, reader.node)
            else:
                consistency_proof(rng.randrange(1, size), size, reader.node)
            times.append(time.perf_counter() - started)
        return {
            "size": size,
            "grow_s": round(grow, 2),
            "inclusion_reads_max": max(reads[:proofs]),
            "consistency_reads_max": max(reads[proofs:]),
            "inclusion_ms_median": round(statistics.median(times[:proofs]) * 1000, 2),
            "consistency_ms_median": round(statistics.median(times[proofs:]) * 1000, 2),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,1000000", help="log sizes, comma-separated")
    parser.add_argument("--proofs", type=int, default=200, help="proofs of each kind")
    args = parser.parse_args()
    for size in (int(text) for text in args.sizes.split(",")):
        print(measure(size, args.proofs), flush=True)


if __name__ == "__main__":
    main()
