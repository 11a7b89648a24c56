"""Realistic archives of any size for ``bench/scale.py``, written straight through the
archive's write path (``Archive.store``).

What a new user's archive looks like after a few years: process instances of about ten
snapshots each (steps a few hours to a few days apart), 4-6 KB of XML per snapshot, five
workflow groups, an attachment on every tenth snapshot, carried forward by the later
snapshots of the instance, ``$modified`` in mixed UTC offsets (UTC, Europe, America,
India). Instances start evenly over ``years`` years ending ``end``; the content is
deterministic (a seed), so two archives of the same size hold the same snapshots.

    .venv/bin/python bench/scale_data.py /tmp/scale-1e4 10000
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document
from imixs_archive.storage.base import Backend

GROUPS = ("Invoice", "Contract", "Ticket", "Order", "Complaint")
STATUSES = ("Open", "In Review", "Approved", "Completed")
TASKS = (1000, 1100, 1200, 1300, 1900)
PEOPLE = [f"user{n:03d}" for n in range(80)]
OFFSETS = (0, 60, 120, -300, -240, 330)
"""Minutes east of UTC the snapshots' ``$modified`` values carry."""
PER_INSTANCE = 10
END = dt.datetime(2026, 10, 31, 18, 0, tzinfo=dt.UTC)
WORDS = [
    "order",
    "invoice",
    "contract",
    "amount",
    "review",
    "approve",
    "ship",
    "customer",
    "supplier",
    "note",
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def snapshot(
    rng: random.Random, origin: str, step: int, steps: int, when: dt.datetime, files: dict
) -> Document:
    """One snapshot of 4-6 KB of XML: the workflow's items plus business items."""
    group = GROUPS[int(origin[:8], 16) % len(GROUPS)]
    last = step == steps - 1
    offset = dt.timezone(dt.timedelta(minutes=OFFSETS[int(origin[-4:], 16) % len(OFFSETS)]))
    local = when.astimezone(offset)
    items: dict = {
        "$uniqueid": f"{origin}-{int(when.timestamp() * 1000)}",
        "$created": local,
        "$modified": local,
        "type": "snapshot-workitem",
        "$workflowgroup": group,
        "$workflowstatus": "Completed" if last else STATUSES[min(step, 2)],
        "$taskid": TASKS[-1] if last else TASKS[min(step, 3)],
        "$creator": PEOPLE[int(origin[9:13], 16) % len(PEOPLE)],
        "$editor": rng.choice(PEOPLE),
        "$modelversion": "1.0.0",
        "amount": round(rng.uniform(10, 10_000), 2),
        "approved": rng.random() < 0.5,
        "due": local + dt.timedelta(days=14),
        "namteam": rng.sample(PEOPLE, rng.randint(1, 4)),
    }
    for n in range(rng.randint(14, 24)):
        items[f"txtfield{n:02d}"] = _text(rng, rng.randint(20, 34))
    doc = Document(items)
    if files:
        doc["$file"] = [dict(files)]
    return doc


def instances(total: int, years: float, seed: int = 7) -> Iterator[Document]:
    """``total`` snapshots (about), instance after instance in time order of their start."""
    rng = random.Random(seed)
    count = max(total // PER_INSTANCE, 1)
    span = dt.timedelta(days=365 * years)
    start = END - span
    for n in range(count):
        origin = f"{n:08x}-{rng.getrandbits(16):04x}-4000-8000-{rng.getrandbits(48):012x}"
        when = start + span * (n / count) + dt.timedelta(seconds=rng.randint(0, 3600))
        files: dict = {}
        for step in range(PER_INSTANCE):
            if (n * PER_INSTANCE + step) % 10 == 3:  # an attachment on every tenth
                body = rng.randbytes(rng.randint(8_000, 40_000))
                files[f"scan-{step}.pdf"] = ["application/pdf", body, {}]
            yield snapshot(rng, origin, step, PER_INSTANCE, when, files)
            when += dt.timedelta(minutes=rng.randint(20, 60 * 24 * 3))


def generate(backend: Backend, total: int, years: float, progress: bool = False) -> int:
    """Store the snapshots; how many."""
    stored = 0
    started = time.monotonic()
    with Archive(backend) as archive, archive.storage.durable_at_end():  # as an import of files
        for doc in instances(total, years):
            archive.store(doc)
            stored += 1
            if progress and stored % 10_000 == 0:
                rate = stored / (time.monotonic() - started)
                print(f"  {stored} snapshots, {rate:.0f}/s", file=sys.stderr, flush=True)
    return stored


def main() -> None:
    from imixs_archive.storage.sqlite.backend import SQLiteBackend

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("folder", type=Path)
    parser.add_argument("snapshots", type=int)
    parser.add_argument("--years", type=float, default=2.0)
    args = parser.parse_args()
    started = time.monotonic()
    with SQLiteBackend(args.folder) as backend:
        count = generate(backend, args.snapshots, args.years, progress=True)
    print(f"{count} snapshots in {time.monotonic() - started:.0f} s into {args.folder}")


if __name__ == "__main__":
    main()
