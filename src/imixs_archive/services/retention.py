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
import logging
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
from imixs_archive.periodic import Periodic
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


@dataclass
class Expired:
    uniqueid: str
    snapshots: list[str]
    group: str
    type: str
    rule: str
    last: dt.datetime
    expired: dt.datetime

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


@dataclass
class RetentionReport:
    dry_run: bool
    instances_seen: int = 0
    held: list[str] = field(default_factory=list)
    """Expired instances kept because of a legal hold."""
    expired: list[Expired] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    """Dry run: files and bytes only the expired snapshots carry; else what was freed."""
    snapshots_deleted: int = 0
    skipped: list[str] = field(default_factory=list)
    """Instances that changed (a new snapshot, a hold) between plan and delete."""
    untimed: list[str] = field(default_factory=list)
    """Instances whose newest snapshot has no plausible time (its id's; ``$modified`` for
    an old id without one): never deleted by retention, listed to be looked at."""

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "instances_seen": self.instances_seen,
            "expired_instances": len(self.expired),
            "expired_snapshots": sum(len(e.snapshots) for e in self.expired),
            "held": self.held,
            "files": self.files,
            "bytes": self.bytes,
            "snapshots_deleted": self.snapshots_deleted,
            "skipped": self.skipped,
            "untimed": self.untimed,
            "instances": [e.to_json() for e in self.expired],
        }


def plan(archive: Archive, policy: Policy, now: dt.datetime) -> RetentionReport:
    """What the policy lets go at ``now`` (nothing is deleted): one paged pass over the
    instances, reading the newest snapshot of each."""
    report = RetentionReport(dry_run=True)
    if policy.empty:
        return report
    held = {hold.uniqueid for hold in archive.holds.list()}
    for ids in archive.iter_instances():
        report.instances_seen += 1
        found = _expired(archive, policy, ids, now)
        if isinstance(found, str):
            report.untimed.append(found)
            continue
        if found is None:
            continue
        if found.uniqueid in held:
            report.held.append(found.uniqueid)
        else:
            report.expired.append(found)
    return report


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
    ids = archive.instance_ids(uniqueid)
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
) -> RetentionReport:
    """Plan, and unless ``dry_run`` delete the expired instances' snapshots."""
    now = now or dt.datetime.now(dt.UTC)
    report = plan(archive, policy, now)
    if dry_run:
        ids = [sid for e in report.expired for sid in e.snapshots]
        report.files, report.bytes = archive.holds.bytes_only_in(ids)
        return report
    report.dry_run = False
    for expired in report.expired:
        if stop is not None and stop.is_set():
            break
        if not _still_expired(archive, expired):
            report.skipped.append(expired.uniqueid)
            continue
        # What only these snapshots carry: released now, removed by the collector (gc)
        # once its grace period has passed.
        files, size = archive.holds.bytes_only_in(expired.snapshots)
        for snapshot_id in expired.snapshots:  # oldest first: the newest goes last
            try:  # Archive.delete refuses (changing nothing) once a hold is placed
                result = archive.delete(snapshot_id, reason="retention")
            except LegalHoldError:
                report.skipped.append(expired.uniqueid)
                break
            report.snapshots_deleted += int(result.existed)
        else:
            report.files += files
            report.bytes += size
        if progress is not None:
            progress(expired)
    return report


def _still_expired(archive: Archive, expired: Expired) -> bool:
    """No hold placed and no snapshot added since the plan."""
    if archive.holds.get(expired.uniqueid) is not None:
        return False
    newest = archive.list_instance(expired.uniqueid, limit=1)
    return bool(newest) and newest[0] == expired.snapshots[-1]


class RetentionLoop:
    """``serve``: the policy applied every ``interval_ms`` on a thread of its own (the
    first run one interval after start). Several servers may run it at once: deletes are
    idempotent, and each instance is checked again right before it is deleted."""

    def __init__(
        self,
        archive: Archive,
        policy: Policy,
        interval_ms: int,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self._archive = archive
        self._policy = policy
        self.last: RetentionReport | None = None
        self._loop = Periodic(
            "retention", interval_ms / 1000, self._run, on_error=on_error or (lambda _e: None)
        )

    @property
    def runs(self) -> int:
        return self._loop.runs

    def _run(self) -> None:
        self.last = run_retention(self._archive, self._policy, stop=self._loop.stop)

    def start(self) -> None:
        self._loop.start()

    def close(self, timeout: float = 10) -> None:
        self._loop.close(timeout)


def retention_loop(
    settings: Settings, archive: Archive, log: logging.Logger
) -> RetentionLoop | None:
    """The loop ``serve`` runs: None when ``ARCHIVE_RETENTION_INTERVAL`` is 0 or the policy
    is empty (a bad policy is refused when the server starts)."""
    policy = Policy.parse(settings.retention)
    if settings.retention_interval <= 0 or policy.empty:
        return None

    def report(exc: Exception) -> None:
        log.warning(
            "retention run failed (next run in %s ms): %s", settings.retention_interval, exc
        )

    return RetentionLoop(archive, policy, settings.retention_interval, on_error=report)
