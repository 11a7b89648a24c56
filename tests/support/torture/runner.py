"""A run: one store (an SQLite folder, or a fresh Cassandra keyspace dropped at the end),
the workflow double, ``serve``, and the rounds of the schedule with the checks after each.

A round: ``serve`` starts (the rounds' pushes and API reads wait for it); every operation
starts at its offset on a thread of its own and is killed when the schedule says; ``serve``
is killed and started again when the schedule says; when all have ended ``serve`` is
stopped, the store is looked at (:mod:`.invariants`), and the model settles.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import string
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from imixs_archive.config import load_settings
from support.torture import invariants
from support.torture import operations as ops
from support.torture.corpus import POLICY
from support.torture.double import TortureDouble
from support.torture.model import Model, describe
from support.torture.operations import Bench, Outcome, Seen, View
from support.torture.processes import Serve
from support.torture.schedule import LONG, Op, Profile, Round, Schedule

SETTINGS = {
    "ARCHIVE_TIMEZONE": "UTC",
    "ARCHIVE_GC_GRACE": "3",
    "ARCHIVE_LEDGER_INTERVAL": "1",
    "ARCHIVE_LEDGER_CHECKPOINT_SECONDS": "2",
    "ARCHIVE_LOG_LEVEL": "WARNING",
    "ARCHIVE_ACCESS_LOG": "false",
    "WORKFLOW_SYNC_INITIALDELAY": "0",
    "WORKFLOW_SYNC_INTERVAL": "200",
    "WORKFLOW_SYNC_RETRYDELAY": "200",
    "WORKFLOW_SYNC_DEADLOCK": "3000",
}
"""Every process of a run: short grace and intervals, so that a round of seconds meets
collections, ledger rounds and the takeover of a killed sync's claims."""
SERVE_SETTINGS = {
    "ARCHIVE_GC_INTERVAL": "3",
    "ARCHIVE_RETENTION_INTERVAL": "4s",
    "ARCHIVE_SCRUB_INTERVAL": "2",
    "ARCHIVE_SCRUB_PERIOD": "120",
    "ARCHIVE_SCRUB_RATE": "0",
    "ARCHIVE_CENSUS_INTERVAL": "10",
}
"""``serve`` also collects, applies the retention policy, scrubs and counts, often."""


@dataclass
class Tally:
    rounds: int = 0
    operations: Counter[str] = field(default_factory=Counter)
    kills: int = 0
    serve_kills: int = 0
    failures: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    """Failures matching a tolerated pattern."""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"{self.rounds} rounds, {sum(self.operations.values())} operations, "
            f"{self.kills} processes killed, serve killed {self.serve_kills} times, "
            f"{len(self.failures)} failures, {len(self.known)} known failures tolerated, "
            f"{self.seconds:.0f} s"
        )


class StoreTarget:
    """Where a run's store lives, and the settings that name it."""

    def __init__(self, kind: str, work: Path, cassandra: str = "") -> None:
        self.kind = kind
        self.folder = work / "store"
        self.keyspace = "torture_" + "".join(
            random.SystemRandom().choices(string.ascii_lowercase, k=10)
        )
        self.cassandra = cassandra

    def env(self) -> dict[str, str]:
        if self.kind == "sqlite":
            return {"ARCHIVE_DATA_DIR": str(self.folder)}
        return {
            "ARCHIVE_DATA_DIR": str(self.folder),  # the ledger's key lives there
            "ARCHIVE_CLUSTER_CONTACTPOINTS": self.cassandra,
            "ARCHIVE_CLUSTER_KEYSPACE": self.keyspace,
            "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "1",
            "ARCHIVE_CLUSTER_CONSISTENCY_READ": "ONE",
            "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "ONE",
        }

    def drop(self) -> None:
        if self.kind != "cassandra":
            return
        import importlib

        module = importlib.import_module("imixs_archive.storage.cassandra.backend")
        store = module.CassandraBackend.from_settings(load_settings(self.env()), create=False)
        try:
            store.drop_keyspace()
        finally:
            store.close()


def base_env() -> dict[str, str]:
    """This process's environment without any archive or workflow setting."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ARCHIVE_", "WORKFLOW_", "BACKUP_", "OIDC_"))
    }


class Torture:
    def __init__(
        self,
        seed: int,
        store: str,
        work: Path,
        *,
        profile: Profile = LONG,
        cassandra: str = "",
        say: Callable[[str], None] = print,
        replay: str = "",
        tolerate: tuple[str, ...] = (),
    ) -> None:
        self.seed = seed
        self.store = StoreTarget(store, work, cassandra)
        self.work = work
        self.say = say
        self.replay = replay
        self.tolerate = [re.compile(pattern) for pattern in tolerate]
        """Failures already reported, to explore past them (a long run's ``--tolerate``):
        counted and said, not a reason to stop."""
        self.schedule = Schedule(seed, profile)
        self.model = Model()
        self.tally = Tally()
        self.double = TortureDouble(self.model)
        self.chains: dict[str, int | None] = {"backup": None, "export": None}
        """Kind -> the round its unfinished run (killed, to be resumed) first began."""
        self.retention_done = 1
        """The round of the last retention command that finished (exit 0). ``serve``'s
        runs share its book (one run of the policy, resumed by whoever runs next), and
        finish unseen: the unfinished run began in this round or later."""
        self._restored: set[str] = set()

    # ---- the run ----------------------------------------------------------------------

    def run(
        self, rounds: int | None = None, seconds: float | None = None, *, at_least: int = 0
    ) -> Tally:
        """Rounds until ``rounds`` or ``seconds`` (the round under way ends; not before
        ``at_least`` rounds), or a failure."""
        started = time.monotonic()
        self.work.mkdir(parents=True, exist_ok=True)
        self.double.start()
        env = {
            **base_env(),
            **SETTINGS,
            **self.store.env(),
            "ARCHIVE_RETENTION": POLICY,
            "ARCHIVE_BACKUP_DIR": str(self.work / "backup"),
            "WORKFLOW_SERVICE_ENDPOINT": self.double.url,
        }
        serve = Serve({**env, **SERVE_SETTINGS}, self.work / "serve.log")
        bench = Bench(env, self.work, self.schedule.corpus, self.model, self.double, serve)
        try:
            for rnd in self.schedule.rounds():
                if rounds is not None and rnd.number > rounds:
                    break
                late = seconds is not None and time.monotonic() - started > seconds
                if late and self.tally.rounds >= at_least:
                    break
                failures = self._known(self._round(bench, rnd))
                self.tally.rounds += 1
                self.tally.seconds = time.monotonic() - started
                if failures:
                    self.tally.failures += failures
                    self._report(rnd, failures)
                    break
        finally:
            bench.serve.stop(10)
            self.double.stop()
            self.store.drop()
        self.tally.seconds = time.monotonic() - started
        return self.tally

    def _known(self, failures: list[str]) -> list[str]:
        new = []
        for failure in failures:
            if any(pattern.search(failure) for pattern in self.tolerate):
                self.tally.known.append(failure)
                self.say(f"  known: {failure[:300]}")
            else:
                new.append(failure)
        return new

    def _report(self, rnd: Round, failures: list[str]) -> None:
        self.say(f"FAILED in round {rnd.number} (seed {self.seed}, store {self.store.kind}):")
        for failure in failures[:40]:
            self.say(f"  {failure}")
        if len(failures) > 40:
            self.say(f"  ... {len(failures) - 40} more")
        self.say(f"  the round: {rnd.describe()}")
        self.say(f"  replay: {self.replay_command(rnd.number)}")
        self.say(f"  its files: {self.work}")

    def replay_command(self, rounds: int) -> str:
        return self.replay or (
            f".venv/bin/python bench/torture.py --store {self.store.kind} --seed {self.seed} "
            f"--rounds {rounds}"
        )

    # ---- one round ----------------------------------------------------------------------

    def _view(self, rnd: Round) -> View:
        model = self.model
        for op in rnd.ops:  # a hold placed or released in the round: in doubt until it ends
            if op.kind == "hold" and op.targets:
                model.held[op.targets[0]] = None
        targets = {sid for op in rnd.ops if op.kind == "delete" for sid in op.targets}
        return View(
            rnd.number,
            frozenset(model.required),
            frozenset(model.removable(targets, retention=True)),
        )

    def _round(self, bench: Bench, rnd: Round) -> list[str]:
        self.say(rnd.describe())
        resent = self._prepare(bench, rnd)
        view = self._view(rnd)
        threads: list[threading.Thread] = []
        outcomes: list[Outcome] = []
        serve_up = threading.Thread(target=self._serve, args=(bench, rnd), daemon=True)
        serve_up.start()
        began = time.monotonic()
        bench.round_over.clear()
        background: list[threading.Thread] = []
        for n, op in enumerate(rnd.ops):
            thread = threading.Thread(
                target=self._run_op, args=(bench, op, view, n, began, outcomes), daemon=True
            )
            thread.start()
            (background if op.option == "background" else threads).append(thread)
        for thread in threads:
            thread.join()
        serve_up.join()
        bench.round_over.set()
        for thread in background:
            thread.join()
        code = bench.serve.stop(60)
        ran = time.monotonic() - began
        self._count(rnd, outcomes)
        failures = [f for out in outcomes for f in out.failures]
        if code not in (0, -15, None):
            failures.append(f"serve ended with exit {code} on SIGTERM (see {bench.serve.log})")
        failures += self._check(bench, rnd, view, outcomes, resent)
        checked = time.monotonic() - began - ran
        self.say(
            f"  {ran:.1f} s, checked in {checked:.1f} s: {len(self.model.required)} snapshots "
            f"archived, {len(self.model.sent)} sent"
        )
        shutil.rmtree(self.work / "imports", ignore_errors=True)
        return failures

    def _prepare(self, bench: Bench, rnd: Round) -> set[str]:
        """Everything the round sends, known to the model before it is sent; the import
        files written. The ids it sends."""
        sent: set[str] = set()
        corpus = self.schedule.corpus
        for n, op in enumerate(rnd.ops):
            files = ops.ImportFiles(op, self._folder(rnd, n)) if op.kind == "import" else None
            for number, step in dict.fromkeys(op.sends):
                doc = corpus.snapshot(number, step)
                expires = self.schedule.instance(number).expires
                described = describe(doc, expires, corpus.digests(number, step))
                self.model.send(described, rnd.number)
                sent.add(described.snapshot_id)
                if op.kind == "sync":
                    self.model.in_workflow.add(described.snapshot_id)
                if files is not None:
                    files.add(doc)
            if files is not None:
                files.flush()
            if op.kind == "hold" and op.targets:
                self.model.touched[op.targets[0]] = rnd.number
        return sent

    def _folder(self, rnd: Round, n: int) -> Path:
        return self.work / "imports" / f"r{rnd.number:05d}-{n:02d}"

    def _serve(self, bench: Bench, rnd: Round) -> None:
        if not rnd.serve:
            return
        try:
            bench.serve.start()
            if rnd.serve_kill is not None:
                time.sleep(rnd.serve_kill)
                bench.serve.kill()
                time.sleep(0.3)
                bench.serve.start()
        except RuntimeError as exc:
            self.tally.failures.append(f"round {rnd.number}: {exc}")

    def _run_op(
        self, bench: Bench, op: Op, view: View, n: int, began: float, outcomes: list[Outcome]
    ) -> None:
        delay = op.start - (time.monotonic() - began)
        if delay > 0:
            time.sleep(delay)
        rnd_folder = self._folder(Round(view.number, (), None), n)
        try:
            out = self._dispatch(bench, op, view, rnd_folder)
        except Exception as exc:  # the harness's own fault: said as a failure, not hidden
            out = Outcome(op)
            out.fail(f"the harness failed: {type(exc).__name__}: {exc}")
        outcomes.append(out)

    def _dispatch(self, bench: Bench, op: Op, view: View, folder: Path) -> Outcome:
        kind = op.kind
        if kind == "import":
            return ops.do_import(bench, op, view, folder)
        if kind in ("backup", "export"):
            chain = self.chains[kind]
            start = view.number if chain is None else chain
            self.chains[kind] = start
            runner = ops.do_backup if kind == "backup" else ops.do_export
            out = runner(bench, op, view, start)
            if out.runs and out.runs[-1].code == 0:
                self.chains[kind] = None
            return out
        if kind == "retention":
            out = ops.do_retention(bench, op, view)
            if out.runs and out.runs[-1].code == 0:
                out.checks.append(self._retention_check(self.retention_done))
                self.retention_done = view.number
            return out
        handler = getattr(ops, f"do_{kind}")
        return handler(bench, op, view)  # type: ignore[no-any-return]

    @staticmethod
    def _retention_check(since: int) -> ops.Check:
        return lambda seen: invariants.retention_problems(seen.model, seen.visible, since)

    def _count(self, rnd: Round, outcomes: list[Outcome]) -> None:
        self.tally.operations.update(op.kind for op in rnd.ops)
        self.tally.kills += sum(
            1 for out in outcomes for r in out.runs if r.killed and not r.timed_out
        )
        self.tally.serve_kills += rnd.serve_kill is not None

    # ---- after the round -----------------------------------------------------------------

    def _check(
        self, bench: Bench, rnd: Round, view: View, outcomes: list[Outcome], resent: set[str]
    ) -> list[str]:
        cassandra = self.store.kind == "cassandra"
        done = self.double.pending()
        synced = Outcome(Op("sync", 0.0, option="(events done)"))
        synced.acked = {sid for sid in self.model.in_workflow if sid not in done}
        synced.acked -= self.model.synced
        self.model.synced |= synced.acked
        verdict = invariants.look(bench, cassandra)
        failures = list(verdict.failures)
        everything = [*outcomes, synced]
        failures += invariants.against_model(self.model, view, everything, verdict.visible, resent)
        failures += invariants.hold_problems(self.model, verdict.holds, outcomes)
        failures += ops.restored_problems(self.double, self.model, self._restored)  # type: ignore[arg-type]
        seen = Seen(verdict.visible, self.model, rnd.number)
        for out in outcomes:
            for check in out.checks:
                failures += check(seen)
            self.tally.notes += out.notes
        if not failures:  # counts and verify only of a store that reads back right
            stats, notes = invariants.stats_problems(bench, verdict, cassandra)
            failures += stats
            self.tally.notes += notes
            failures += invariants.quiet_checks(bench)
        self._settle(rnd, view, verdict, resent)
        return failures

    def _settle(
        self, rnd: Round, view: View, verdict: invariants.Verdict, resent: set[str]
    ) -> None:
        self.model.settle(verdict.visible, rnd.number, disturbed=view.removable | resent)
        self.model.archived = {
            sid: found
            for sid, found in verdict.found.items()
            if found is not self.model.sent.get(sid)
        }
        for uid, state in list(self.model.held.items()):
            if state is None:
                self.model.held[uid] = verdict.holds.get(uid, False)
