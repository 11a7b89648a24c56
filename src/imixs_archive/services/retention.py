"""Retention: snapshots of process instances whose keeping period is over are deleted,
unless the instance is under legal hold.

A policy (``ARCHIVE_RETENTION``, or ``--policy``) is a comma list of rules
``group:<$workflowgroup>=<period>``, ``type:<type>=<period>`` and ``*=<period>``, a period
being ``<n>y`` (calendar years) or ``<n>d`` (days), counted from the instance's **last**
snapshot (the time in its id). The newest snapshot decides: its ``$workflowgroup`` rule
first, else its ``type`` rule, else ``*``; an instance no rule names is kept. When the
period is over, every snapshot of the instance goes, oldest first, through
``Archive.delete`` (the one safe delete path), so a run that stops part-way leaves the
newest snapshot and the next run finishes the instance. Legal holds
(``archive/holds.py``) are checked again right before each instance is deleted (and
``Archive.delete`` refuses every snapshot of a held instance), and an
instance that received a snapshot after it was planned is left for the next run.

No Cassandra TTLs: pieces and files are shared between snapshots and instances (a TTL
on a piece would delete bytes other snapshots still use), a hold must be able to stop a
deletion that a TTL would already have scheduled in the data, and the Java tables must
stay readable with their own rows as the Java service wrote them.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.document.conventions import (
    CLOCK_SKEW,
    EARLIEST_SNAPSHOT,
    modified_time,
    origin_id,
    snapshot_millis,
    snapshot_time,
)
from imixs_archive.document.labels import label
from imixs_archive.errors import ConfigError, DocumentError, LegalHoldError, NotFoundError
from imixs_archive.jsonable import Jsonable
from imixs_archive.periodic import Schedule
from imixs_archive.timezones import zone_label

_RULE = re.compile(r"\s*(?:(group|type):(.+?)|(\*))\s*=\s*([0-9]+)\s*([yd])\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Period:
    amount: int
    unit: str
    """``y`` (calendar years) or ``d`` (days)."""

    def after(self, when: dt.datetime) -> dt.datetime:
        if self.unit == "d":
            return when + dt.timedelta(days=self.amount)
        try:
            return when.replace(year=when.year + self.amount)
        except ValueError:  # 29 February in a year without it
            return when.replace(year=when.year + self.amount, day=28)

    def __str__(self) -> str:
        return f"{self.amount}{self.unit}"


@dataclass(frozen=True)
class Policy:
    groups: dict[str, Period] = field(default_factory=dict)
    types: dict[str, Period] = field(default_factory=dict)
    default: Period | None = None

    @property
    def empty(self) -> bool:
        return not self.groups and not self.types and self.default is None

    def key(self) -> str:
        """The rules in one canonical line (a stopped run goes on only for the same)."""
        rules = [f"group:{name}={period}" for name, period in sorted(self.groups.items())]
        rules += [f"type:{name}={period}" for name, period in sorted(self.types.items())]
        return ",".join(rules + ([f"*={self.default}"] if self.default else []))

    def period_for(self, group: str, kind: str) -> tuple[str, Period] | None:
        """The rule that applies to an instance whose newest snapshot has this
        ``$workflowgroup`` and ``type`` (names compared case-insensitively)."""
        if group.lower() in self.groups:
            return f"group:{group}", self.groups[group.lower()]
        if kind.lower() in self.types:
            return f"type:{kind}", self.types[kind.lower()]
        if self.default is not None:
            return "*", self.default
        return None

    @classmethod
    def parse(cls, text: str) -> Policy:
        groups: dict[str, Period] = {}
        types: dict[str, Period] = {}
        default: Period | None = None
        for part in filter(str.strip, text.split(",")):
            match = _RULE.fullmatch(part)
            if match is None:
                raise ConfigError(
                    f"retention rule {part.strip()!r}: write group:NAME=10y, type:NAME=90d or *=30y"
                )
            kind, name, star, amount, unit = match.groups()
            period = Period(int(amount), unit.lower())
            if star:
                default = period
            elif kind.lower() == "group":
                groups[name.strip().lower()] = period
            else:
                types[name.strip().lower()] = period
        return cls(groups, types, default)


LISTED = 1_000
"""Instances a report lists by name (expired, held, skipped, untimed); it counts them all."""


@dataclass
class Expired:
    uniqueid: str
    snapshots: list[str]
    group: str
    type: str
    rule: str
    last: dt.datetime
    expired: dt.datetime

    # Own JSON: counts the snapshots; a run's book reads it back (``restored``).
    def to_json(self) -> dict[str, Any]:
        return {
            "uniqueid": self.uniqueid,
            "snapshots": len(self.snapshots),
            "group": self.group,
            "type": self.type,
            "rule": self.rule,
            "last_snapshot": self.last.isoformat(timespec="seconds"),
            "expired": self.expired.isoformat(timespec="seconds"),
        }

    @classmethod
    def restored(cls, saved: dict[str, Any]) -> Expired:
        """From :meth:`to_json` (a run's book): the ids are not kept, only how many."""
        return cls(
            saved["uniqueid"],
            [""] * int(saved["snapshots"]),
            saved["group"],
            saved["type"],
            saved["rule"],
            dt.datetime.fromisoformat(saved["last_snapshot"]),
            dt.datetime.fromisoformat(saved["expired"]),
        )


_COUNTS = [
    "instances_seen",
    "held_count",
    "expired_count",
    "expired_snapshots",
    "files",
    "bytes",
    "snapshots_deleted",
    "untimed_count",
]


@dataclass
class RetentionReport(Jsonable):
    JSON_NAMES = (("expired_count", "expired_instances"), ("expired", "instances"))
    JSON_NULL_IF_EMPTY = ("resumed",)

    dry_run: bool
    part: int = 1
    parts: int = 1
    resumed: str = ""
    """Where the run went on from ('' when it began: see ``instance_runs.py``)."""
    finished: bool = True
    """False: the run stopped before its end (``serve`` stopping); the next goes on."""
    instances_seen: int = 0
    expired_count: int = 0
    expired_snapshots: int = 0
    held: list[str] = field(default_factory=list)
    """Expired instances kept because of a legal hold (the first ``LISTED``)."""
    held_count: int = 0
    files: int = 0
    bytes: int = 0
    """Dry run: files and bytes only the expired snapshots carry; else what was freed."""
    snapshots_deleted: int = 0
    skipped: list[str] = field(default_factory=list)
    """Instances that changed (a new snapshot, a hold) between decision and delete."""
    untimed: list[str] = field(default_factory=list)
    """Instances whose newest snapshot has no plausible time (its id's; ``$modified`` for
    an old id without one): never deleted by retention, listed to be looked at."""
    untimed_count: int = 0
    expired: list[Expired] = field(default_factory=list)
    """The expired instances (the first ``LISTED``: ``expired_count`` counts them all)."""

    def count_expired(self, found: Expired) -> None:
        self.expired_count += 1
        self.expired_snapshots += len(found.snapshots)
        if len(self.expired) < LISTED:
            self.expired.append(found)

    def count_held(self, uniqueid: str) -> None:
        self.held_count += 1
        _listed(self.held, uniqueid)

    def count_untimed(self, uniqueid: str) -> None:
        self.untimed_count += 1
        _listed(self.untimed, uniqueid)

    def saved(self) -> dict[str, Any]:
        """What a run's book keeps (``instance_runs.py``)."""
        return {
            **{name: getattr(self, name) for name in _COUNTS},
            "held": self.held,
            "skipped": self.skipped,
            "untimed": self.untimed,
            "expired": [e.to_json() for e in self.expired],
        }

    def restore(self, saved: dict[str, Any]) -> None:
        for name in _COUNTS:
            setattr(self, name, int(saved.get(name, 0)))
        self.held, self.skipped, self.untimed = saved["held"], saved["skipped"], saved["untimed"]
        self.expired = [Expired.restored(e) for e in saved["expired"]]


def _listed(names: list[str], name: str) -> None:
    if len(names) < LISTED:
        names.append(name)


def groups_no_snapshot_has(archive: Archive, policy: Policy) -> list[str]:
    """The workflow groups the policy names that no snapshot of the archive carries (a
    typo: such a rule deletes nothing). From the whole-archive figures, kept: their cost
    follows the months the archive spans, not its snapshots."""
    if not policy.groups:
        return []
    # Here, not at the top: the analytics would load with every retention command.
    from imixs_archive.analytics.archive_figures import archive_figures

    held = {name.casefold() for name in archive_figures(archive).by.get("group", {})}
    return [name for name in sorted(policy.groups) if name.casefold() not in held]


def preview_retention(
    archive: Archive, policy: Policy, now: dt.datetime | None = None
) -> RetentionReport:
    """What the policy lets go (at ``now``): a dry run that keeps no book (the web UI's
    preview; ``retention --dry-run`` keeps one and goes on where it stopped)."""
    return run_retention(archive, policy, now=now, dry_run=True, keep_book=False)


@dataclass
class Due:
    """When the policy lets an instance go: the rule that names it, the time of its
    newest snapshot and when its keeping period ends."""

    group: str
    type: str
    rule: str
    last: dt.datetime
    ends: dt.datetime


def _due(archive: Archive, policy: Policy, ids: list[str], now: dt.datetime) -> Due | str | None:
    """:class:`Due` of the instance of ``ids`` (oldest first); its uniqueid when the time
    of its newest snapshot is not plausible (nothing is decided on a time that cannot be
    right); None when no rule names it, or its newest snapshot is being written."""
    newest = ids[-1]
    try:
        doc = archive.load(newest, with_files=False)
    except NotFoundError:
        return None  # being written or deleted: decided on the next run
    group, kind = label(doc.get_first("$workflowgroup")), label(doc.get_first("type"))
    rule = policy.period_for(group, kind)
    if rule is None:
        return None
    name, period = rule
    try:
        last = snapshot_time(newest) if snapshot_millis(newest) else modified_time(doc)
    except (DocumentError, OverflowError, OSError, ValueError):
        return origin_id(newest)
    if not EARLIEST_SNAPSHOT <= last <= now + CLOCK_SKEW:
        return origin_id(newest)
    return Due(group, kind, f"{name}={period}", last, period.after(last))


def _expired(
    archive: Archive, policy: Policy, ids: list[str], now: dt.datetime
) -> Expired | str | None:
    """The instance when the policy lets it go now (see :func:`_due`)."""
    due = _due(archive, policy, ids, now)
    if due is None or isinstance(due, str) or due.ends > now:
        return due if isinstance(due, str) else None
    return Expired(origin_id(ids[-1]), ids, due.group, due.type, due.rule, due.last, due.ends)


@dataclass
class InstanceRetention:
    """What the policy says of one process instance (the retention preview of one)."""

    uniqueid: str
    due: Due | None
    """None: no rule names it (kept), or its newest snapshot is being written."""
    untimed: bool = False
    held: bool = False

    # Own JSON: the due's rule and times flattened, null when there is none.
    def to_json(self) -> dict[str, Any]:
        due = self.due
        return {
            "uniqueid": self.uniqueid,
            "rule": due.rule if due else None,
            "last_snapshot": due.last.isoformat(timespec="seconds") if due else None,
            "ends": due.ends.isoformat(timespec="seconds") if due else None,
            "held": self.held,
            "untimed": self.untimed,
        }


def retention_sentence(found: InstanceRetention, tz: dt.tzinfo) -> str:
    """What the policy decides for one instance, in words (times in ``tz``), e.g. "its
    snapshots go on 2034-03-01 10:00 (Europe/Berlin) (group:Invoice=10y, ...)"."""
    due = found.due
    if found.untimed:
        said = "its newest snapshot has no plausible time: retention never deletes it"
    elif due is None:
        said = "no rule of the retention policy names it: kept"
    else:
        ends = f"{due.ends.astimezone(tz):%Y-%m-%d %H:%M} ({zone_label(tz)})"
        if due.ends <= dt.datetime.now(dt.UTC):
            said = f"its snapshots are due to go since {ends}: the next retention run deletes them"
        else:
            said = f"its snapshots go on {ends}"
        said += f" ({due.rule}, counted from its newest snapshot)"
    if found.held:
        said += "; under legal hold: kept while it is"
    return said


def instance_retention(
    archive: Archive, policy: Policy, uniqueid: str, now: dt.datetime | None = None
) -> InstanceRetention | None:
    """What the policy says of one instance now: one partition and its newest snapshot
    read, whatever the archive holds. None when the archive holds none of it."""
    now = now or dt.datetime.now(dt.UTC)
    ids = archive.index.instance_ids(uniqueid)
    if not ids:
        return None
    due = _due(archive, policy, ids, now) if not policy.empty else None
    held = archive.holds.get(uniqueid) is not None
    if isinstance(due, str):
        return InstanceRetention(uniqueid, None, untimed=True, held=held)
    return InstanceRetention(uniqueid, due, held=held)


def run_retention(
    archive: Archive,
    policy: Policy,
    *,
    now: dt.datetime | None = None,
    dry_run: bool = False,
    stop: threading.Event | None = None,
    progress: Callable[[Expired], None] | None = None,
    seen: Callable[[], None] | None = None,
    part: int = 1,
    parts: int = 1,
    restart: bool = False,
    keep_book: bool = True,
) -> RetentionReport:
    """Apply the policy (``dry_run``: say what it lets go, delete nothing) to every
    instance, or to part ``part`` of ``parts`` of them (``--part K/N``: several processes
    share a run), one instance at a time, going on where a stopped run of the same policy
    ended unless ``restart`` (``archive/instance_runs.py``; ``keep_book=False``: a
    preview, nothing kept). ``progress`` after each expired instance, ``seen`` after
    every instance. A ``stop`` set ends the run after the instance at hand, its book kept.
    BusyError when another process runs this part."""
    work = _RetentionWork(archive, policy, now or dt.datetime.now(dt.UTC), dry_run)
    work.stop, work.progress = stop, progress
    report = work.report
    report.part, report.parts = part, parts
    if policy.empty:
        return report
    run = archive.run_over_instances(
        work,
        name="retention-preview" if dry_run else "retention",
        key=policy.key(),
        part=part,
        parts=parts,
        restart=restart,
        keep_book=keep_book,
        seen=seen,
    )
    report.resumed, report.finished = run.resumed, run.finished
    return report


GOING_REMEMBERED = 100_000
"""Instances a dry run remembers the verdict of (for files several instances carry)."""


class _RetentionWork:
    """The policy applied to one instance at a time (``instance_runs.InstanceJob``)."""

    def __init__(self, archive: Archive, policy: Policy, now: dt.datetime, dry_run: bool) -> None:
        self.archive, self.policy, self.now = archive, policy, now
        self.report = RetentionReport(dry_run=dry_run)
        self.stop: threading.Event | None = None
        self.progress: Callable[[Expired], None] | None = None
        self._going: dict[str, bool] = {}

    def saved(self) -> dict[str, Any]:
        return self.report.saved()

    def restore(self, saved: dict[str, Any]) -> None:
        self.report.restore(saved)

    def visit(self, ids: list[str]) -> bool:
        """One instance: its counts added at the end, all at once (stopped in the middle,
        it is met again), but for the snapshots deleted, counted as they go (not met
        again)."""
        found = _expired(self.archive, self.policy, ids, self.now)
        report = self.report
        if isinstance(found, str):
            report.count_untimed(found)
        elif found is not None and self.archive.holds.get(found.uniqueid) is not None:
            report.count_held(found.uniqueid)
        elif found is not None:
            self._expired(found)
        report.instances_seen += 1
        return self.stop is None or not self.stop.is_set()

    def _expired(self, found: Expired) -> None:
        report = self.report
        if report.dry_run:
            files, size = self.archive.holds.bytes_going_with(found.snapshots, self._goes)
        elif not _still_expired(self.archive, found):
            files = size = -1
        else:
            # What only these snapshots carry: released now, removed by the collector
            # (gc) once its grace period has passed.
            files, size = self.archive.holds.bytes_only_in(found.snapshots)
            if not self._delete(found):
                files = size = -1
        if files < 0:  # a new snapshot or a hold since it was read: left
            _listed(report.skipped, found.uniqueid)
        else:
            report.files += files
            report.bytes += size
            report.count_expired(found)
        if self.progress is not None:
            self.progress(found)

    def _delete(self, found: Expired) -> bool:
        """Delete the instance's snapshots, oldest first (the newest goes last); False
        when a hold stopped it (``Archive.delete`` refuses, changing nothing)."""
        for snapshot_id in found.snapshots:
            try:
                result = self.archive.delete(snapshot_id, reason="retention")
            except LegalHoldError:
                return False
            self.report.snapshots_deleted += int(result.existed)
        return True

    def _goes(self, uniqueid: str) -> bool:
        """Whether another instance goes too (a dry run's file counts), remembered."""
        known = self._going.get(uniqueid)
        if known is None:
            ids = self.archive.index.instance_ids(uniqueid)
            found = _expired(self.archive, self.policy, ids, self.now) if ids else None
            known = isinstance(found, Expired) and self.archive.holds.get(uniqueid) is None
            if len(self._going) >= GOING_REMEMBERED:
                self._going.clear()
            self._going[uniqueid] = known
        return known


def _still_expired(archive: Archive, expired: Expired) -> bool:
    """No hold placed and no snapshot added since the plan."""
    if archive.holds.get(expired.uniqueid) is not None:
        return False
    newest = archive.list_instance(expired.uniqueid, limit=1)
    return bool(newest) and newest[0] == expired.snapshots[-1]


class RetentionLoop(Schedule[RetentionReport]):
    """``serve``: the policy applied every ``interval_ms`` on a thread of its own (the
    first run one interval after start). Several servers may run it at once: deletes are
    idempotent, and each instance is checked again right before it is deleted."""

    name = "retention"
    failing = "retention run failed (tried again at the next run)"

    def __init__(
        self,
        archive: Archive,
        policy: Policy,
        interval_ms: int,
    ) -> None:
        super().__init__(interval_ms / 1000)
        self._archive = archive
        self._policy = policy

    def work(self) -> RetentionReport:
        return run_retention(self._archive, self._policy, stop=self.stop)


def retention_loop(settings: Settings, archive: Archive) -> RetentionLoop | None:
    """The loop ``serve`` runs: None when ``ARCHIVE_RETENTION_INTERVAL`` is 0 or the policy
    is empty (a bad policy is refused when the server starts)."""
    policy = Policy.parse(settings.retention)
    if settings.retention_interval <= 0 or policy.empty:
        return None

    return RetentionLoop(archive, policy, settings.retention_interval)
