"""The whole-workflow restore measured as a drill: every instance (its newest snapshot)
into an empty workflow, with the workflow answering after a realistic delay.

    .venv/bin/python bench/restore_drill.py --instances 10000              # the recorded run
    .venv/bin/python bench/restore_drill.py --instances 100000 --rounds 1
    .venv/bin/python bench/restore_drill.py --instances 500 --post-ms 5     # a quick one

Builds a SQLite archive of ``--instances`` process instances (two snapshots each, a 2 KiB
attachment) once, starts the workflow test double in a process of its own (each GET
answered after ``--get-ms``, each POST after ``--post-ms``: the workflow sets the pace),
then, per round and interleaved, both as whole ``imixs-archive`` processes into a wiped
workflow:

* ``range``: the baseline, ``restore --from 1970-01-01 --to 2100-01-01`` (the existing
  range restore, day by day, ``--workers`` instances at once);
* ``all``: ``restore --all`` (the planned whole-workflow restore, ``--workers`` requests in
  flight, progress with the time left on standard error).

Then ``restore --as-of`` a point between each instance's two snapshots: its plan (a dry
run, every instance with its item changes) and its restore into a wiped workflow. Then a
drill with a kill: ``restore --all`` is SIGKILLed once half of it is saved as done,
and run again; the double counts how often each snapshot was posted (must be once).
Prints instances/s of each run, the time left the progress line estimated at 10 % and at
50 % against the time it took, and the kill drill's figures. Not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from imixs_archive.archive.snapshots import Archive  # noqa: E402
from imixs_archive.document.model import Document  # noqa: E402
from imixs_archive.storage.sqlite.backend import SQLiteBackend  # noqa: E402
from support.workflow_double import WorkflowDouble, file_entry  # noqa: E402

DAY = dt.datetime(2024, 1, 10, 8, 0, tzinfo=dt.UTC)


def populate(store: Path, instances: int) -> None:
    """``instances`` instances of two snapshots each (ids as the workflow makes them)."""
    rng = random.Random(1)
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        if archive.list_instance(_uid(instances - 1), limit=1):
            return  # built before (--store)
        for number in range(instances):
            uid = _uid(number)
            for step in range(2):
                modified = DAY + dt.timedelta(hours=step, seconds=number)
                millis = int(modified.timestamp() * 1000)
                doc = Document(
                    {
                        "$uniqueid": f"{uid}-{millis}",
                        "type": "snapshot-workitem",
                        "$modified": modified,
                        "$created": DAY,
                        "subject": f"case {number}",
                        "$taskid": 1000 + step,
                        "$workflowgroup": "Invoice" if number % 3 else "Ticket",
                    }
                )
                doc["$file"] = [{"scan.pdf": file_entry(rng.randbytes(2048))}]
                archive.store(doc)
            if number % 10_000 == 9_999:
                print(f"  {number + 1} instances archived", file=sys.stderr, flush=True)


def _uid(number: int) -> str:
    return f"{number:08x}-0000-4000-8000-000000000000"


# ---- the workflow double in a process of its own ----------------------------------------


def serve_double(get_ms: float, post_ms: float) -> None:
    with WorkflowDouble() as double:
        double.delays = {"GET": get_ms / 1000, "POST": post_ms / 1000}
        print(double.url, flush=True)
        sys.stdin.read()  # until the parent closes it


class DoubleProcess:
    def __init__(self, get_ms: float, post_ms: float) -> None:
        command = [sys.executable, __file__, "--serve-double", str(get_ms), str(post_ms)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        self.root = self.url.removesuffix("/api")

    def wipe(self) -> None:
        request = urllib.request.Request(self.root + "/_double/wipe", method="POST")
        urllib.request.urlopen(request, timeout=30).close()

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.root + "/_double/stats", timeout=30) as answer:
            return dict(json.load(answer))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


# ---- runs ----------------------------------------------------------------------------------


class Run:
    """One ``imixs-archive restore`` process; progress lines kept with their times."""

    def __init__(self, env: dict[str, str], args: list[str]) -> None:
        self.started = time.monotonic()
        self.lines: list[tuple[float, str]] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "imixs_archive", "restore", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append((time.monotonic(), line.strip()))

    def wait(self) -> tuple[float, str]:
        out, _ = self.process.communicate()
        self._reader.join()
        self.ended = time.monotonic()
        if self.process.returncode != 0:
            raise SystemExit(f"restore failed ({self.process.returncode}): {out} {self.lines}")
        return self.ended - self.started, out.strip().splitlines()[-1]

    def estimate_at(self, share: int) -> tuple[float, float] | None:
        """(time left the progress line said, time it took) at the first line past
        ``share`` percent."""
        for when, line in self.lines:
            if "left" not in line:
                continue
            percent = int(line.split("(")[1].split("%")[0])
            if percent >= share:
                said = _seconds(line.rsplit("about ", 1)[1].removesuffix(" left"))
                return said, self.ended - when
        return None


def _seconds(text: str) -> float:
    total = 0.0
    for part in text.split():
        unit = part[-1]
        total += float(part[:-1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    return total


def saved_after(store: Path) -> str:
    """The watermark a running ``restore --all`` saved ("" before it saved one)."""
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        state = archive.state.load()
        if state.get_first("restore.plan.status") != "running":
            return ""
        return str(state.get_first("restore.plan.after") or "")


def kill_drill(
    env: dict[str, str], store: Path, double: DoubleProcess, args: argparse.Namespace
) -> None:
    double.wipe()
    half = _uid(args.instances // 2)
    flags = ["--all", "--workers", str(args.workers)]
    started = time.monotonic()
    run = Run(env, flags)
    while saved_after(store) < half:
        time.sleep(0.2)
    run.process.send_signal(signal.SIGKILL)
    run.process.wait()
    killed_at = time.monotonic() - started
    before = double.stats()
    seconds, last = Run(env, flags).wait()
    after = double.stats()
    print(
        f"kill drill: killed after {killed_at:.1f} s ({before['snapshots_posted']} posted), "
        f"resumed run {seconds:.1f} s: {last}; snapshots posted {after['snapshots_posted']} "
        f"of {args.instances}, most posts of one snapshot {after['most_posts_of_one']}"
    )


def as_of_drill(env: dict[str, str], double: DoubleProcess, args: argparse.Namespace) -> None:
    """``restore --as-of`` between the two snapshots of every instance: the plan (a dry
    run, every instance with its item changes) and the restore into a wiped workflow."""
    point = (DAY + dt.timedelta(minutes=30)).isoformat()
    flags = ["--as-of", point, "--workers", str(args.workers), "--not-yet-file", os.devnull]
    started = time.monotonic()
    dry = subprocess.run(
        [sys.executable, "-m", "imixs_archive", "restore", *flags, "--dry-run"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    planned = time.monotonic() - started
    summary = dry.stdout.strip().splitlines()[-1]
    going_back = int(summary.split(" would go back")[0])
    double.wipe()
    seconds, last = Run(env, flags).wait()
    print(
        f"as-of: plan (dry run) {planned:.1f} s, {dry.stdout.count(chr(10))} lines: "
        f"{summary}; restore {seconds:.1f} s ({going_back / seconds:.1f} instances sent/s, "
        f"the plan included): {last}"
    )


def main() -> None:
    if sys.argv[1:2] == ["--serve-double"]:
        serve_double(float(sys.argv[2]), float(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2, help="0: the as-of and kill drills only")
    parser.add_argument("--workers", type=int, default=16, help="requests in flight")
    parser.add_argument("--get-ms", type=float, default=5.0)
    parser.add_argument("--post-ms", type=float, default=25.0)
    parser.add_argument("--store", type=Path, help="keep the archive here (built once)")
    parser.add_argument("--no-kill", action="store_true", help="skip the kill drill")
    parser.add_argument("--no-as-of", action="store_true", help="skip the as-of drill")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="imixs-restore-drill-"))
    store = args.store or work / "store"
    started = time.perf_counter()
    populate(store, args.instances)
    print(f"archive of {args.instances} instances ready in {time.perf_counter() - started:.0f} s")
    double = DoubleProcess(args.get_ms, args.post_ms)
    env = {
        **os.environ,
        "ARCHIVE_DATA_DIR": str(store),
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
        "ARCHIVE_RESTORE_SAVE_EVERY": "1s",
    }
    kinds = {
        "range": ["--from", "1970-01-01", "--to", "2100-01-01", "--workers", str(args.workers)],
        "all": ["--all", "--workers", str(args.workers)],
    }
    try:
        for number in range(args.rounds):
            order = list(kinds) if number % 2 == 0 else list(reversed(kinds))
            for kind in order:
                double.wipe()
                run = Run(env, kinds[kind])
                seconds, last = run.wait()
                stats = double.stats()
                eta = [run.estimate_at(share) for share in (10, 50)]
                said = "; ".join(
                    f"at {share}%: said {e[0]:.0f} s left, took {e[1]:.0f} s"
                    for share, e in zip((10, 50), eta, strict=True)
                    if e is not None
                )
                print(
                    f"round {number + 1} {kind:5}: {args.instances / seconds:7.1f} instances/s "
                    f"({seconds:.1f} s; {stats['posts']} POSTs, {stats['requests']} requests, "
                    f"most posts of one {stats['most_posts_of_one']}) {said} | {last}"
                )
        if not args.no_as_of:
            as_of_drill(env, double, args)
        if not args.no_kill:
            kill_drill(env, store, double, args)
    finally:
        double.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
