"""Processes of the ledger's kill tests (``tests/ledger/test_kills.py``), run as
``python -m support.ledger_kill_tasks ROLE`` over the store the environment's settings
name, and killed with SIGKILL at random moments:

- ``store ORDER LANE SCRATCH_AFTER``: stores snapshots :func:`snapshot` 0, 1, 2 ...
  (``forward``, or ``shuffled`` in an order of its own), as a sync replica would; started
  again after a kill it begins again from the first (those stored are met as stored). Now
  and then it stores a snapshot of its own (:func:`scratch`) and deletes it again at once,
  as the history cleanup does: its subject gets two entries, often in one round;
- ``sequence``: sequencing rounds, one after the other, as ``serve`` runs them, until
  killed, with a lease of ``LEASE_MS`` milliseconds (short, so that a killed holder's lease
  runs out within the test and the other process's rounds overlap its own at times).

The number of snapshots is ``LEDGER_KILL_COUNT`` (an environment variable): more than the
storers store before the test ends them. ``LEDGER_KILL_PACE`` (seconds, default 0): a storer's
pause after each snapshot, so that the queue's minute partitions stay within the test
node's tombstone limit (a hundredth of Cassandra's: ``scripts/cassandra-node``).
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Iterator
from typing import Any

from imixs_archive.config import load_settings
from imixs_archive.document.model import Document
from imixs_archive.ledger import sequencer as sequencer_module
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.runtime import open_archive
from support.snapshots import make_snapshot

COUNT_ENV = "LEDGER_KILL_COUNT"
PACE_ENV = "LEDGER_KILL_PACE"
LEASE_MS = 300
STEPS = 4
"""Snapshots of one process instance."""
BLOCK = 16
"""The shuffled storer's order: blocks of this many, each shuffled."""
SCRATCH_EVERY = 4
"""A storer stores and deletes a snapshot of its own after every this many."""


def origin(instance: int) -> str:
    return f"{instance:08x}-0000-4000-8000-00000000c0de"


def snapshot(number: int) -> Document:
    """Snapshot ``number``: of process instance ``number // STEPS``; every other instance
    carries a file from snapshot to snapshot (stored once), and each of its snapshots adds
    one of its own."""
    instance, step = divmod(number, STEPS)
    files: dict[str, bytes | list[Any]] | None = None
    if instance % 2 == 0:
        files = {
            "carried.pdf": random.Random(instance).randbytes(20_000),
            f"step-{step}.bin": random.Random(number).randbytes(3_000 + 500 * step),
        }
    return make_snapshot(step, origin=origin(instance), files=files)


def snapshot_id(number: int) -> str:
    return str(snapshot(number).get_first("$uniqueid"))


def order(how: str, count: int) -> Iterator[int]:
    """The numbers a storer stores, in its order: ``forward``, or ``shuffled`` (in blocks,
    so that the two storers meet all along)."""
    rng = random.Random(os.getpid())
    for first in range(0, count, BLOCK):
        block = list(range(first, min(first + BLOCK, count)))
        if how == "shuffled":
            rng.shuffle(block)
        yield from block


def scratch(lane: str, number: int) -> Document:
    """The snapshot a storer of ``lane`` stores and deletes again after snapshot
    ``number`` (when ``number % SCRATCH_EVERY == 0``): an instance of its own."""
    return make_snapshot(number % STEPS, origin=f"{number:08x}-0000-4000-8000-{lane * 12}")


def scratch_id(lane: str, number: int) -> str:
    return str(scratch(lane, number).get_first("$uniqueid"))


def store(how: str, lane: str, scratch_after: int) -> None:
    """Prints what it begins (``s N``: snapshot N; ``x N``: the store of the lane's
    scratch snapshot N; ``d N``: its deletion) and what it finished (``X N``, ``D N``). The
    scratch snapshots of numbers up to ``scratch_after`` (begun by the lane's killed
    processes) are left to the test."""
    pace = float(os.environ.get(PACE_ENV, "0"))
    with open_archive(load_settings()) as archive:
        for number in order(how, int(os.environ[COUNT_ENV])):
            print(f"s {number}", flush=True)
            archive.store(snapshot(number))
            time.sleep(pace)
            if number % SCRATCH_EVERY or number <= scratch_after:
                continue
            doc = scratch(lane, number)
            print(f"x {number}", flush=True)
            archive.store(doc)
            print(f"X {number}\nd {number}", flush=True)
            archive.delete(str(doc.get_first("$uniqueid")), reason="retention")
            print(f"D {number}", flush=True)


def sequence() -> None:
    sequencer_module.LEASE_MS = LEASE_MS
    rng = random.Random(os.getpid())
    with open_archive(load_settings()) as archive:
        sequencer = Sequencer(archive, load_settings())
        while True:
            report = sequencer.run(checkpoint=rng.random() < 0.2)
            if report.logged or report.adopted:
                print(f"logged {report.logged} adopted {report.adopted}", flush=True)
            time.sleep(rng.uniform(0.0, 0.03))


def main(argv: list[str]) -> None:
    role = argv[0]
    if role == "store":
        store(argv[1], argv[2], int(argv[3]))
    elif role == "sequence":
        sequence()
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
