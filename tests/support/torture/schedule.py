"""The rounds of a run, made from the seed alone: which operations a round starts, when,
with what data or targets, and which are SIGKILLed after how long. Nothing here depends on
how an earlier round went, so the same seed gives the same schedule on any machine (the
schedule keeps its own account of what it has sent, to pick targets among them).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from support.torture.corpus import Corpus, Instance

PROCESS_KINDS = (
    "import",
    "sync",
    "delete",
    "retention",
    "hold",
    "gc",
    "verify",
    "backup",
    "restore",
    "ledger",
    "export",
    "get",
    "file",
    "list",
    "stats",
    "opener",
)
"""Operations that are a process of their own (and so can be killed)."""
THREAD_KINDS = ("push", "api")
"""Operations the harness runs itself over HTTP against ``serve``."""
WEIGHTS = {
    "import": 5,
    "push": 2,
    "sync": 2,
    "delete": 2,
    "retention": 1,
    "hold": 1,
    "gc": 1.5,
    "verify": 1,
    "backup": 1,
    "restore": 1,
    "ledger": 1,
    "export": 1,
    "get": 1.5,
    "file": 1,
    "list": 1,
    "stats": 1,
    "opener": 2,
    "api": 1.5,
}


@dataclass(frozen=True)
class Profile:
    """How large and how busy the rounds are."""

    ops: tuple[int, int] = (3, 7)
    """Operations per round, at least and at most."""
    batches: tuple[tuple[float, int, int], ...] = ((0.5, 2, 15), (0.3, 40, 300), (0.2, 1000, 2500))
    """Import sizes: (share, fewest, most snapshots)."""
    kill: float = 0.35
    """Share of processes killed."""
    kill_within: tuple[float, float] = (0.3, 4.0)
    serve: float = 0.5
    """Share of rounds in which ``serve`` runs."""
    serve_kill: float = 0.35
    """Share of those in which it is killed (and started again)."""
    large: float = 0.03
    """Share of steps that add a large attachment."""
    opener_seconds: tuple[float, float] = (2.0, 8.0)
    readers: int = 2
    """Background readers in every round (each opens the store, reads one snapshot and
    closes it, in a loop)."""
    weights: tuple[tuple[str, float], ...] = tuple(WEIGHTS.items())
    rounds: int = 30
    """Rounds of a run on one store (a long torture then goes on with the next seed on a
    fresh store: the checks read the whole store, and a store that only grows would
    slow the rounds down)."""


SHORT = Profile(
    ops=(3, 6),
    batches=((0.45, 2, 12), (0.25, 30, 150), (0.3, 1000, 1300)),
    kill_within=(0.3, 3.0),
    large=0.02,
    opener_seconds=(2.0, 5.0),
    serve=0.4,
    weights=tuple({**WEIGHTS, "import": 7}.items()),
)
"""The pytest run on SQLite: a few rounds within a minute, many of them with an import of
over 1,000 snapshots (an import that large counts its days before it ends, after its
writes were made durable: where issue 48's corruption struck)."""
SHORT_CASSANDRA = replace(SHORT, batches=((0.6, 2, 12), (0.4, 30, 250)))
"""The pytest run on Cassandra: imports of at most 250 snapshots, so that a minute holds
several rounds (a round with 1,200 snapshots and its checks takes about a minute there)."""
LONG = replace(
    SHORT,
    batches=((0.45, 2, 15), (0.25, 30, 300), (0.3, 1000, 2500)),
    kill_within=(0.3, 4.0),
    large=0.03,
    opener_seconds=(2.0, 8.0),
)
"""The long run (``bench/torture.py``): rounds as the pytest run's, imports up to 2,500
snapshots, longer kill delays and reads, 30 rounds per store."""
LONG_CASSANDRA = replace(LONG, batches=((0.45, 2, 15), (0.55, 30, 300)))
"""The long run on Cassandra: imports of at most 300 snapshots. The test node fails a read
past 1,000 tombstones (a hundredth of Cassandra's threshold), and the ledger's queue holds
a tombstone per change logged in its minute's partition: an import of 2,500 in a minute
there stands for 250,000 a minute on a real node, which no import writes
(docs/cassandra.md)."""


@dataclass(frozen=True)
class Op:
    kind: str
    start: float
    """Seconds after the round began."""
    kill_after: float | None = None
    """SIGKILL this long after it started (None: it runs to its end)."""
    sends: tuple[tuple[int, int], ...] = ()
    """(instance, step) of each snapshot it sends."""
    targets: tuple[str, ...] = ()
    """Snapshot ids or instance ids it acts on or reads."""
    option: str = ""
    seconds: float = 0.0
    """How long a loop runs (sync, opener, api reads)."""

    def label(self) -> str:
        kill = f" killed after {self.kill_after:.2f}s" if self.kill_after is not None else ""
        what = f" {self.option}" if self.option else ""
        count = f" {len(self.sends)} snapshots" if self.sends else ""
        return f"{self.kind}{what}{count} at {self.start:.2f}s{kill}"


@dataclass(frozen=True)
class Round:
    number: int
    ops: tuple[Op, ...]
    serve_kill: float | None
    """Seconds after the round began at which ``serve`` is killed (and started again)."""
    serve: bool = True
    """Whether ``serve`` runs in the round (without it, only commands: an archive fed by
    cron jobs, and no process holding the store open all the time)."""

    def describe(self) -> str:
        serve = f"; serve killed at {self.serve_kill:.2f}s" if self.serve_kill else ""
        serve = serve if self.serve else "; no serve"
        return f"round {self.number}: " + ", ".join(op.label() for op in self.ops) + serve


@dataclass
class _Sent:
    """The schedule's own account of what it sent (not of what was acknowledged)."""

    steps: dict[int, int] = field(default_factory=dict)
    """Instance -> steps sent."""
    by_channel: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    next_instance: int = 0


class Schedule:
    def __init__(self, seed: int, profile: Profile = LONG) -> None:
        self.seed = seed
        self.profile = profile
        self.corpus = Corpus(seed, large=profile.large)
        self.rng = random.Random(seed)
        self._sent = _Sent()
        self._instances: dict[int, Instance] = {}

    def rounds(self) -> Iterator[Round]:
        number = 0
        while True:
            number += 1
            yield self._round(number)

    def instance(self, number: int) -> Instance:
        if number not in self._instances:
            self._instances[number] = self.corpus.instance(number)
        return self._instances[number]

    def _round(self, number: int) -> Round:
        rng = self.rng
        if number == 1:  # the store: made by an import (and serve) before anything else
            return Round(
                1, (Op("import", 0.0, sends=self._take(rng.randint(20, 60), "import")),), None
            )
        count = rng.randint(*self.profile.ops)
        serve = rng.random() < self.profile.serve
        pairs = [(k, w) for k, w in self.profile.weights if serve or k not in THREAD_KINDS]
        kinds = [kind for kind, _weight in pairs]
        weights = [weight for _kind, weight in pairs]
        ops = [self._op(rng.choices(kinds, weights)[0]) for _ in range(count)]
        # Readers are always there, as in an archive in use: they open the store, read a
        # snapshot and close it, again and again, while the round lasts.
        for _ in range(self.profile.readers):
            ops.append(Op("opener", 0.0, targets=self._sent_ids(12), option="background"))
        serve_kill = rng.uniform(0.5, 6.0) if rng.random() < self.profile.serve_kill else None
        return Round(number, tuple(ops), serve_kill if serve else None, serve)

    def _op(self, kind: str) -> Op:
        rng, profile = self.rng, self.profile
        start = rng.uniform(0.0, 1.5)
        kill = None
        if kind in PROCESS_KINDS and rng.random() < profile.kill:
            kill = rng.uniform(*profile.kill_within)
        return self._shape(kind, Op(kind, start, kill))

    def _shape(self, kind: str, op: Op) -> Op:
        """The op's data and targets."""
        rng = self.rng
        if kind == "import":
            if self._sent.by_channel and rng.random() < 0.15:
                return _with(op, sends=self._again(rng.randint(2, 30)), option="again")
            layout = "data" if rng.random() < 0.3 else ""
            share = rng.random()
            for part, least, most in self.profile.batches:
                if share < part:
                    sends = self._take(rng.randint(least, most), "import")
                    return _with(op, sends=sends, option=layout)
                share -= part
            return _with(op, sends=self._take(5, "import"), option=layout)
        if kind == "push":
            return _with(op, sends=self._take(rng.randint(1, 12), "push"))
        if kind == "sync":
            sends = self._take(rng.randint(3, 40), "workflow")
            return _with(op, sends=sends, seconds=rng.uniform(2.0, 6.0))
        if kind == "delete":
            return _with(op, targets=self._sent_ids(rng.randint(1, 4)))
        if kind == "hold":
            option = "place" if rng.random() < 0.6 else "release"
            return _with(op, targets=self._instances_sent(1), option=option)
        if kind == "verify":
            return _with(op, option=rng.choice(["", "--slice", "--part 1/2", "--part 2/2"]))
        if kind == "restore":
            return _with(op, targets=self._restorable())
        if kind in ("get", "file"):
            return _with(op, targets=self._sent_ids(rng.randint(1, 3)))
        if kind == "list":
            option = rng.choice(["uniqueid", "days", "all"])
            return _with(op, targets=self._instances_sent(1), option=option)
        if kind in ("opener", "api"):
            seconds = rng.uniform(*self.profile.opener_seconds)
            return _with(op, targets=self._sent_ids(12), seconds=seconds)
        if kind == "gc":
            return _with(op, option=rng.choice(["", "", "--part 1/2", "--part 2/2"]))
        return op

    # ---- what to send, what to target ---------------------------------------------------

    def _take(self, count: int, channel: str) -> tuple[tuple[int, int], ...]:
        """``count`` new snapshots: the next steps of open instances, or new instances.
        The workflow channel takes no instance whose retention is over (the sync's
        catch-up could bring a deleted one back; see model.py)."""
        rng, sent = self.rng, self._sent
        out: list[tuple[int, int]] = []
        for _ in range(count):
            open_ = [
                n
                for n, steps in sent.steps.items()
                if steps < self.instance(n).steps and self._fits(n, channel)
            ]
            if not open_ or rng.random() < 0.3:
                number = sent.next_instance
                sent.next_instance += 1
                while not self._fits(number, channel):
                    sent.steps.setdefault(number, 0)
                    number = sent.next_instance
                    sent.next_instance += 1
            else:
                number = rng.choice(open_[-40:])
            step = sent.steps.get(number, 0)
            sent.steps[number] = step + 1
            out.append((number, step))
        sent.by_channel.setdefault(channel, []).extend(out)
        return tuple(out)

    def _fits(self, number: int, channel: str) -> bool:
        return channel != "workflow" or not self.instance(number).expires

    def _again(self, count: int) -> tuple[tuple[int, int], ...]:
        """Snapshots sent before (by import or push), sent again."""
        pool = self._sent.by_channel.get("import", []) + self._sent.by_channel.get("push", [])
        return tuple(self.rng.choice(pool) for _ in range(count)) if pool else ()

    def _all_sent(self) -> list[tuple[int, int]]:
        return [pair for pairs in self._sent.by_channel.values() for pair in pairs]

    def _sent_ids(self, count: int) -> tuple[str, ...]:
        pool = self._all_sent()
        if not pool:
            return ()
        picks = [
            self.rng.choice(pool[-300:] if self.rng.random() < 0.7 else pool) for _ in range(count)
        ]
        return tuple(self.corpus.snapshot_id(self.instance(n), step) for n, step in picks)

    def _instances_sent(self, count: int) -> tuple[str, ...]:
        pool = sorted({n for n, _step in self._all_sent()})
        if not pool:
            return ()
        return tuple(self.instance(self.rng.choice(pool)).uniqueid for _ in range(count))

    def _restorable(self) -> tuple[str, ...]:
        """An instance sent by import or push whose retention is not over: the workflow
        does not hold it, so a restore sends its snapshots."""
        pool = sorted(
            {
                n
                for channel in ("import", "push")
                for n, _step in self._sent.by_channel.get(channel, [])
                if not self.instance(n).expires
            }
        )
        return (self.instance(self.rng.choice(pool)).uniqueid,) if pool else ()


def _with(op: Op, **changes: object) -> Op:
    return replace(op, **changes)  # type: ignore[arg-type]
