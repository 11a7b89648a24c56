"""What the ledger costs an import: small snapshots, where a per-snapshot cost shows most.

Writes the workload (``--make DIR``): 500 process instances of 10 snapshots each, 2-5 KB
of text items, no attachments (an attachment's bytes dwarf any per-snapshot cost), one
``<data>`` XML file per instance. The timing is an import of it into a fresh store by this
code against the same import by the code before the ledger (a worktree of 58339d0), in
turn (interleaved whole-process runs): commands and figures in bench/README.md ("The
ledger's cost").
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
"""This tree's code: the workload is written with it. The timing takes the code on
``PYTHONPATH`` (this tree's, or the one it is compared with)."""

INSTANCES = 500
STEPS = 10
WORDS = [
    "invoice",
    "order",
    "delivery",
    "approved",
    "rejected",
    "pending",
    "review",
    "customer",
    "supplier",
]


def make(folder: Path, instances: int = INSTANCES, steps: int = STEPS) -> int:
    """The workload in ``folder``; its size in bytes."""
    sys.path.insert(0, str(SRC))
    from imixs_archive.document.model import Document
    from imixs_archive.document.xml_writer import to_xml

    rng = random.Random(30)
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    base = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    for number in range(instances):
        uniqueid = f"{number:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        docs = []
        for step in range(steps):
            when = base + dt.timedelta(hours=number, minutes=step)
            millis = int(when.timestamp() * 1000)
            doc = Document(
                {
                    "$uniqueid": [f"{uniqueid}-{millis}"],
                    "$created": [base + dt.timedelta(hours=number)],
                    "$modified": [when],
                    "$workflowgroup": ["Invoice"],
                    "$taskid": [1000 + step * 10],
                    "type": ["workitem"],
                    "comment": [" ".join(rng.choices(WORDS, k=rng.randint(300, 700)))],
                }
            )
            docs.append(to_xml(doc).split(b"?>", 1)[1])
        data = b'<?xml version="1.0" encoding="UTF-8"?>\n<data>' + b"".join(docs) + b"</data>\n"
        (folder / f"instance-{number:04d}.xml").write_bytes(data)
        total += len(data)
    return total


def store_on_cassandra(folder: Path, tests: Path, files: int = 100) -> float:
    """Seconds to store the snapshots of the first ``files`` workload files, one by one,
    into a fresh keyspace of the test node (``ARCHIVE_TEST_CASSANDRA``), by the code on
    ``sys.path`` (``PYTHONPATH``: this tree's ``src`` or an older one's; ``tests``: that
    tree's tests folder, for its helpers)."""
    import time

    sys.path.insert(0, str(tests))
    import imixs_archive
    from imixs_archive.archive.snapshots import Archive
    from imixs_archive.document.xml_reader import iter_xml_documents
    from support.backends import open_cassandra, random_keyspace

    docs = []
    for path in sorted(folder.glob("*.xml"))[:files]:
        with path.open("rb") as handle:
            docs += list(iter_xml_documents(handle))
    store = open_cassandra(random_keyspace("ledger_cost_"))
    try:
        archive = Archive(store)
        started = time.perf_counter()
        for doc in docs:
            archive.store(doc)
        took = time.perf_counter() - started
        archive.files.close()
    finally:
        store.drop_keyspace()
        store.close()
    print(f"code: {Path(imixs_archive.__file__).parent}", file=sys.stderr)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--make", type=Path, metavar="DIR", help="write the workload here")
    parser.add_argument(
        "--cassandra",
        type=Path,
        nargs=2,
        metavar=("WORKLOAD", "TESTS"),
        help="time storing 1,000 of the workload's snapshots on the test node",
    )
    args = parser.parse_args()
    if args.make is not None:
        size = make(args.make)
        print(f"{INSTANCES * STEPS} snapshots, {size / 1e6:.1f} MB of XML in {args.make}")
    elif args.cassandra is not None:
        print(f"{store_on_cassandra(*args.cassandra):.3f} s")
    else:
        parser.error("give --make DIR or --cassandra WORKLOAD TESTS")


if __name__ == "__main__":
    main()
