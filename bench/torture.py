"""The concurrency and fault torture, long (issue 48): rounds of processes at once against
one store, some SIGKILLed, ``serve`` killed and started again, the store checked against
the harness's model after every round (``tests/support/torture``).

    .venv/bin/python bench/torture.py --minutes 60 --store sqlite --seed 1
    .venv/bin/python bench/torture.py --store cassandra --seed 7 --rounds 12   # a replay

Prints each round's operations, then per run: rounds, operations, processes killed,
``serve`` kills, failures. A run stops at its first failing round (printing the seed, the
round and the command that replays its schedule); with ``--minutes`` the next run starts on
a fresh store with the next seed until the time is up. ``--store cassandra`` uses the node
of ``ARCHIVE_TEST_CASSANDRA`` (default 127.0.0.1:9042), a fresh keyspace per run, dropped
after it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.torture.runner import Tally, Torture
from support.torture.schedule import LONG, LONG_CASSANDRA, SHORT, SHORT_CASSANDRA


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupt)  # the runs' finally: serve stopped, keyspace dropped
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--store", choices=["sqlite", "cassandra"], default="sqlite")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=float, help="run (and start new runs) this long")
    parser.add_argument("--rounds", type=int, help="stop after this many rounds (a replay)")
    parser.add_argument("--profile", choices=["long", "short"], default="long")
    parser.add_argument("--work", type=Path, help="folder for the stores (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the folders of clean runs")
    parser.add_argument("--quiet", action="store_true", help="no line per round")
    parser.add_argument(
        "--tolerate",
        action="append",
        default=[],
        metavar="REGEX",
        help="a failure already reported: counted and said, the run goes on (repeatable)",
    )
    args = parser.parse_args()
    if args.minutes is None and args.rounds is None:
        parser.error("give --minutes or --rounds")
    cassandra = os.environ.get("ARCHIVE_TEST_CASSANDRA", "127.0.0.1:9042")
    root = args.work or Path(tempfile.mkdtemp(prefix="torture-", dir=_scratch()))
    short, long = (SHORT, LONG) if args.store == "sqlite" else (SHORT_CASSANDRA, LONG_CASSANDRA)
    profile = long if args.profile == "long" else short
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
    seed, totals, failed = args.seed, [], []
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        work = root / f"{args.store}-{seed}"
        say = (lambda _text: None) if args.quiet else print
        torture = Torture(
            seed,
            args.store,
            work,
            profile=profile,
            cassandra=cassandra,
            say=_flushed(say),
            tolerate=tuple(args.tolerate),
        )
        tally = torture.run(rounds=args.rounds or profile.rounds, seconds=left)
        print(f"seed {seed} ({args.store}): {tally.line()}", flush=True)
        if args.quiet:  # the report the rounds' lines would have ended with
            for failure in tally.failures[:40]:
                print(f"  FAILED: {failure}")
        for note in sorted(set(tally.notes))[:20]:
            print(f"  note: {note}")
        totals.append(tally)
        if tally.failures:
            failed.append((seed, torture.replay_command(tally.rounds)))
        elif not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        if deadline is None:
            break
        seed += 1
    _summary(args.store, totals, failed)
    return 1 if failed else 0


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _flushed(say):  # type: ignore[no-untyped-def]
    def out(text: str) -> None:
        say(text)
        sys.stdout.flush()

    return out


def _summary(store: str, totals: list[Tally], failed: list[tuple[int, str]]) -> None:
    rounds = sum(t.rounds for t in totals)
    operations = sum(sum(t.operations.values()) for t in totals)
    kills = sum(t.kills for t in totals)
    serve = sum(t.serve_kills for t in totals)
    seconds = sum(t.seconds for t in totals)
    print(
        f"total ({store}): {len(totals)} runs, {rounds} rounds, {operations} operations, "
        f"{kills} processes killed, serve killed {serve} times, {len(failed)} failing runs, "
        f"{seconds / 60:.1f} min"
    )
    for seed, command in failed:
        print(f"  failed: seed {seed}: {command}")


def _scratch() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


if __name__ == "__main__":
    sys.exit(main())
