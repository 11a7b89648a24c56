"""What the ledger costs an import: small snapshots, where a per-snapshot cost shows most.

Writes the workload (``--make DIR``): 500 process instances of 10 snapshots each, 2-5 KB
of text items, no attachments (an attachment's bytes dwarf any per-snapshot cost), one
``<data>`` XML file per instance. Then time, in turn, an import into a fresh store by
this code, the ledger's queue written with each snapshot and the queue sequenced and a
checkpoint signed at the end (``ledger checkpoint``), against the same import by the code
before the ledger (a worktree of it). Commands and figures: bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--make", type=Path, required=True, metavar="DIR")
    args = parser.parse_args()
    size = make(args.make)
    print(f"{INSTANCES * STEPS} snapshots, {size / 1e6:.1f} MB of XML in {args.make}")


if __name__ == "__main__":
    main()
