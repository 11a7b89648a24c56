"""Restore to a point in time: every process instance changed after the point goes back
to how it was at the point.

:func:`plan_as_of` reads the archive only. The instances with a snapshot whose
``$modified`` is after ``point`` (and not after ``changed_until``, default: no end) are
the candidates; for each, the newest snapshot whose ``$modified`` is at or before the
point is what comes back, and the plan holds the item-level difference against the
instance's newest snapshot (``item_diff.py``). An instance with no snapshot at or before
the point did not exist yet: the workflow's API cannot delete it, so it is listed apart
(``not_yet``) for the operator to act on. ``groups`` (``$workflowgroup``, compared
case-insensitively; an instance is in a group when the snapshot coming back or its newest
is) and ``filters`` (as a range restore's, on the snapshot coming back, or on the newest
for an instance that did not exist yet) narrow the candidates.

Bad input is refused before anything is read from the workflow or sent to it: a point in
the future or ``changed_until`` not after the point (``ConfigError``, exit 2); a point
before the archive's first snapshot, or a group no snapshot in the archive carries
(``NotFoundError``, exit 4).

The plan's :meth:`AsOfPlan.token` names it (the request and each instance's snapshot
coming back): the web API's confirmation step sends it back, and the restore runs only if
the plan made again has the same token (nothing changed since it was shown).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import iter_files, modified_time, not_a_snapshot, origin_id
from imixs_archive.document.model import Document
from imixs_archive.errors import ConfigError, NotFoundError
from imixs_archive.recovery.item_diff import SnapshotDiff, diff_snapshots
from imixs_archive.recovery.restore import Filter, matches

MICROSECOND = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class AsOf:
    """What to bring back: instances changed after ``point`` (and up to
    ``changed_until``), to their state at ``point``. Times are aware."""

    point: dt.datetime
    changed_until: dt.datetime | None = None
    groups: tuple[str, ...] = ()
    filters: tuple[Filter, ...] = ()
    strict: bool = False

    def __post_init__(self) -> None:
        for when in (self.point, self.changed_until):
            if when is not None and when.tzinfo is None:
                raise ConfigError("an as-of time must carry an offset (or be read in a zone)")

    def key(self) -> str:
        """The request as one line (what a saved progress and a plan's token belong to):
        ``as-of 2026-11-27T12:55:00+00:00 until ... groups a,b filters x=y strict``."""
        parts = [f"as-of {self.point.astimezone(dt.UTC).isoformat()}"]
        if self.changed_until is not None:
            parts.append(f"until {self.changed_until.astimezone(dt.UTC).isoformat()}")
        if self.groups:
            parts.append("groups " + ",".join(sorted(g.casefold() for g in self.groups)))
        if self.filters:
            parts.append("filters " + ";".join(f"{n}={p.pattern}" for n, p in self.filters))
        if self.strict:
            parts.append("strict")
        return " ".join(parts)


@dataclass(frozen=True)
class BackToPoint:
    """One instance in the plan: ``snapshot`` comes back; the instance's newest snapshot
    is ``newest``; ``diff`` what that changes; ``bytes`` the attachments sent;
    ``changed_later``: it was changed after ``changed_until`` too (that change is undone
    as well); ``refused``: why the workflow would refuse the snapshot (``not_a_snapshot``:
    the run fails it, the dry run says so), '' when it takes it."""

    origin: str
    snapshot: str
    newest: str
    modified: dt.datetime
    diff: SnapshotDiff
    bytes: int
    changed_later: bool = False
    refused: str = ""


@dataclass(frozen=True)
class NotYet:
    """An instance that did not exist yet at the point: its first snapshot (``first``,
    ``created``: that snapshot's ``$modified``), its newest and its ``$workflowgroup``."""

    origin: str
    first: str
    created: dt.datetime
    newest: str
    group: str


@dataclass
class AsOfPlan:
    """What a restore as of ``request.point`` would do, sorted by instance id."""

    request: AsOf
    back: list[BackToPoint]
    not_yet: list[NotYet]
    filtered: int = 0

    def token(self) -> str:
        digest = hashlib.sha256(self.request.key().encode())
        for entry in self.back:
            digest.update(f"\n{entry.origin} {entry.snapshot}".encode())
        for new in self.not_yet:
            digest.update(f"\nnew {new.origin}".encode())
        return digest.hexdigest()[:16]

    @property
    def planned_bytes(self) -> int:
        return sum(entry.bytes for entry in self.back)


@dataclass(frozen=True)
class _Judged:
    """One candidate instance as the planner judged it (no documents kept: a plan of
    100,000 instances holds their differences only): its groups (case-folded), whether
    the filters pass, and what it goes into the plan as."""

    groups: frozenset[str]
    passes: bool
    entry: BackToPoint | NotYet


def check_as_of(archive: Archive, request: AsOf, now: dt.datetime) -> None:
    """Refuse a point in the future, an end not after the point, a point before the
    archive's first snapshot and a group no snapshot carries (nothing is read from or
    sent to the workflow)."""
    if request.point > now:
        raise ConfigError(f"as-of {_show(request.point)} is in the future (now {_show(now)})")
    until = request.changed_until
    if until is not None and until <= request.point:
        raise ConfigError(f"changed-until {_show(until)} is not after the as-of point")
    known, first = known_at(archive, request.point)
    if first is None:
        raise NotFoundError("the archive holds no snapshot: there is no state to go back to")
    if not known:
        raise NotFoundError(
            f"as-of {_show(request.point)} is before the archive's first snapshot "
            f"({_show(first)}): the archive does not know that state"
        )
    if request.groups:  # from the kept figures: answered before any plan is made
        _require_known_groups(archive, request.groups, [])


def known_at(archive: Archive, point: dt.datetime) -> tuple[bool, dt.datetime | None]:
    """Whether some complete snapshot has a ``$modified`` at or before ``point``, and the
    ``$modified`` of one snapshot read (None: the archive holds none). Reads by the day
    index: a snapshot filed under an earlier UTC day answers at once; on the point's own
    day the snapshots are read in time order until one is at or before the point."""
    point_day = point.astimezone(dt.UTC).date()
    seen: dt.datetime | None = None
    for day in archive.days.with_snapshots():
        for _day, snapshot_id in archive.days.iter_days(day, day):
            modified = modified_time(archive.load(snapshot_id, with_files=False))
            seen = modified if seen is None else min(seen, modified)
            if day < point_day or modified <= point:
                return True, seen
            if day > point_day:
                return False, seen
    return False, seen


def plan_as_of(
    archive: Archive, request: AsOf, *, now: dt.datetime | None = None, workers: int = 4
) -> AsOfPlan:
    """The plan of a restore as of ``request.point`` (reads the archive only)."""
    check_as_of(archive, request, now or dt.datetime.now(dt.UTC))
    origins = sorted(set(changed_after(archive, request)))
    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="as-of") as pool:
        judged = [
            found
            for found in pool.map(lambda o: _judge(archive, o, request), origins)
            if found is not None
        ]
    _require_known_groups(archive, request.groups, judged)
    plan = AsOfPlan(request, [], [])
    wanted_groups = {g.casefold() for g in request.groups}
    for found in judged:
        if wanted_groups and not found.groups & wanted_groups:
            continue
        if not found.passes:
            plan.filtered += 1
        elif isinstance(found.entry, BackToPoint):
            plan.back.append(found.entry)
        else:
            plan.not_yet.append(found.entry)
    return plan


def changed_after(archive: Archive, request: AsOf) -> Iterator[str]:
    """The instances with a snapshot whose ``$modified`` is after the point (and at or
    before ``changed_until``); an instance may come more than once."""
    end = request.changed_until or dt.datetime.max.replace(tzinfo=dt.UTC) - MICROSECOND
    for _day, snapshot_id in archive.days.iter_modified(
        request.point + MICROSECOND, end + MICROSECOND
    ):
        yield origin_id(snapshot_id)


def _judge(archive: Archive, origin: str, request: AsOf) -> _Judged | None:
    """Read the instance's newest snapshot and its newest at or before the point (None
    when its snapshots were deleted meanwhile, or it is at that snapshot already)."""
    snapshot_ids = archive.list_instance(origin)  # newest first
    if not snapshot_ids:
        return None
    newest = archive.load(snapshot_ids[0], with_files=False)
    doc = newest
    for index, snapshot_id in enumerate(snapshot_ids):
        if index:
            doc = archive.load(snapshot_id, with_files=False)
        if modified_time(doc) <= request.point:
            if index == 0:
                return None
            return _Judged(
                frozenset({_group(newest).casefold(), _group(doc).casefold()}),
                matches(doc, request.filters, strict=request.strict),
                _back(origin, newest, doc, request.changed_until),
            )
    return _Judged(
        frozenset({_group(newest).casefold()}),
        matches(newest, request.filters, strict=request.strict),
        _not_yet(origin, newest, doc),
    )


def _require_known_groups(archive: Archive, groups: tuple[str, ...], judged: list[_Judged]) -> None:
    """Every group asked for is carried by some snapshot: by a candidate's, else by any
    snapshot of the archive (the whole-archive figures' groups: kept, not read anew)."""
    missing = {g.casefold() for g in groups}
    for found in judged:
        missing -= found.groups
    if not missing:
        return
    # Here, not at the top: the analytics would load with every recovery command.
    from imixs_archive.analytics.archive_figures import archive_figures

    missing -= {name.casefold() for name in archive_figures(archive).by.get("group", {})}
    if not missing:
        return
    names = ", ".join(sorted(g for g in groups if g.casefold() in missing))
    raise NotFoundError(f"group {names}: no snapshot in the archive is of that workflow group")


def _back(origin: str, newest: Document, back: Document, until: dt.datetime | None) -> BackToPoint:
    return BackToPoint(
        origin=origin,
        snapshot=str(back.get_first("$uniqueid")),
        newest=str(newest.get_first("$uniqueid")),
        modified=modified_time(back),
        diff=diff_snapshots(newest, back),
        bytes=sum(entry.size or 0 for entry in iter_files(back)),
        changed_later=until is not None and modified_time(newest) > until,
        refused=not_a_snapshot(back) or "",
    )


def _not_yet(origin: str, newest: Document, first: Document) -> NotYet:
    return NotYet(
        origin=origin,
        first=str(first.get_first("$uniqueid")),
        created=modified_time(first),
        newest=str(newest.get_first("$uniqueid")),
        group=_group(newest),
    )


def _group(doc: Document) -> str:
    return str(doc.get_first("$workflowgroup", "") or "")


def _show(when: dt.datetime) -> str:
    return when.isoformat(timespec="seconds")
