"""Retention over a large archive (``archive/instance_runs.py``): one instance at a time,
a run that stops (Ctrl-C, a kill, ``serve`` stopping) goes on where it stood, and parts
(``--part K/N``) add up to the whole; the dry run counts a file several expired
instances share once. On both backends."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from imixs_archive.archive import part_runs
from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.holds import place_hold
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.document.model import Document
from imixs_archive.errors import BusyError
from imixs_archive.services.retention import Policy, RetentionReport, run_retention
from support.kills import process_env, run_command, run_killed, stops_at
from support.snapshots import make_snapshot, numbered_origin

pytestmark = pytest.mark.both_stores  # store-facing: a retention stopped, killed and resumed

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
POLICY = Policy.parse("group:Invoice=10y")
TEMPLATE = b"the template every invoice carries " * 200
INSTANCES = 24


def snap(k: int, year: int, group: str, files: dict[str, bytes]) -> Document:
    when = dt.datetime(year, 1 + k % 12, 1, 12, tzinfo=dt.UTC)
    doc = make_snapshot(
        0, origin=numbered_origin(k), modified=when, dollar_workflowgroup=group, files=files
    )
    doc["$uniqueid"] = f"{numbered_origin(k)}-{int(when.timestamp() * 1000)}"
    return doc


def fill(archive: Archive) -> dict[str, int]:
    """Invoices of 2012 (expired, two snapshots each, a file of their own and the shared
    template), invoices of 2020 (kept), contracts of 2012 (no rule: kept). One expired
    invoice is held, so the template stays after all: the dry run counts it only when no
    hold is placed (``fill`` places none)."""
    expired = snapshots = 0
    for k in range(1, INSTANCES + 1):
        own = {f"own-{k}.pdf": f"only invoice {k} ".encode() * 300, "t.docx": TEMPLATE}
        if k % 3 == 0:
            archive.store(snap(k, 2020, "Invoice", {"t.docx": TEMPLATE}))
        elif k % 3 == 1:
            archive.store(snap(k, 2011, "Invoice", own))
            archive.store(snap(k, 2012, "Invoice", own))
            expired, snapshots = expired + 1, snapshots + 2
        else:
            archive.store(snap(k, 2012, "Contract", {}))
    return {"expired": expired, "snapshots": snapshots}


def totals(reports: list[RetentionReport]) -> tuple[int, ...]:
    return (
        sum(r.instances_seen for r in reports),
        sum(r.expired_count for r in reports),
        sum(r.expired_snapshots for r in reports),
        sum(r.files for r in reports),
        sum(r.bytes for r in reports),
        sum(r.snapshots_deleted for r in reports),
    )


def test_parts_add_up_to_the_whole(archive: Archive) -> None:
    want = fill(archive)
    whole = run_retention(archive, POLICY, now=NOW, dry_run=True)
    assert whole.expired_count == want["expired"] and whole.instances_seen == INSTANCES
    # each invoice's own file; the template stays (the kept invoices of 2020 carry it)
    assert whole.files == want["expired"]
    parts = [
        run_retention(archive, POLICY, now=NOW, dry_run=True, part=k, parts=3) for k in (1, 2, 3)
    ]
    assert totals(parts) == totals([whole])
    assert all(0 < p.instances_seen < INSTANCES for p in parts)  # each a share of them
    deleted = [run_retention(archive, POLICY, now=NOW, part=k, parts=2) for k in (2, 1)]
    assert sum(r.snapshots_deleted for r in deleted) == want["snapshots"]
    assert sum(r.files for r in deleted) == want["expired"]
    after = run_retention(archive, POLICY, now=NOW, dry_run=True)
    assert after.expired_count == 0 and after.instances_seen == INSTANCES - want["expired"]
    books = CheckBooks(archive.backend).names("retention")
    assert [name for name in books if "-lease/" not in name] == []  # finished: books gone


def test_a_file_only_expired_instances_share_is_counted_once(archive: Archive) -> None:
    for k in (1, 2, 3):
        archive.store(snap(k, 2012, "Invoice", {"t.docx": TEMPLATE}))
    dry = run_retention(archive, POLICY, now=NOW, dry_run=True)
    assert (dry.files, dry.bytes) == (1, len(TEMPLATE))
    in_parts = [
        run_retention(archive, POLICY, now=NOW, dry_run=True, part=k, parts=2) for k in (1, 2)
    ]
    assert (sum(r.files for r in in_parts), sum(r.bytes for r in in_parts)) == (1, len(TEMPLATE))
    place_hold(archive.backend, numbered_origin(2), "case 1", "tester", NOW)
    held = run_retention(archive, POLICY, now=NOW, dry_run=True)
    assert (held.files, held.expired_count, held.held_count) == (0, 2, 1)  # the hold keeps it


def test_a_stopped_run_goes_on_where_it_stood(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after some instances: the same command goes on after the last finished one,
    and its report counts the whole run; ``serve`` stopping (its event) likewise."""
    want = fill(archive)
    monkeypatch.setattr(part_runs, "SAVE_MS", 10_000_000)  # saved only when stopping
    with pytest.raises(KeyboardInterrupt):
        run_retention(archive, POLICY, now=NOW, seen=stops_at(9))
    stop = threading.Event()

    def stop_soon() -> None:
        stop.set()

    stopped = run_retention(archive, POLICY, now=NOW, stop=stop, seen=stop_soon)
    assert not stopped.finished and stopped.resumed == "after 9 instances"
    rest = run_retention(archive, POLICY, now=NOW)  # the stop is seen after the next one
    assert rest.finished and rest.resumed == "after 11 instances"
    assert rest.instances_seen == INSTANCES
    assert (rest.expired_count, rest.snapshots_deleted) == (want["expired"], want["snapshots"])
    assert run_retention(archive, POLICY, now=NOW).expired_count == 0
    restarted = run_retention(archive, POLICY, now=NOW, dry_run=True, restart=True)
    assert restarted.resumed == "" and restarted.instances_seen == INSTANCES - want["expired"]


def test_another_policy_or_restart_begins_again(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(archive)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    stop = threading.Event()
    stop.set()
    first = run_retention(archive, POLICY, now=NOW, dry_run=True, stop=stop)
    assert not first.finished and first.instances_seen == 1
    other = run_retention(archive, Policy.parse("group:Invoice=11y"), now=NOW, dry_run=True)
    assert other.resumed == "" and other.instances_seen == INSTANCES


def test_one_process_per_part(archive: Archive) -> None:
    fill(archive)
    books = CheckBooks(archive.backend)
    assert books.take_lease("retention-lease/1/1", "someone@else:1:x", 60_000) == ""
    with pytest.raises(BusyError, match="another process"):
        run_retention(archive, POLICY, now=NOW)
    assert run_retention(archive, POLICY, now=NOW, part=1, parts=2).finished  # another part


KILLED = """
from imixs_archive.services.retention import Policy, run_retention
with open_archive(load_settings(dict(os.environ))) as archive:
    run_retention(archive, Policy.parse("group:Invoice=10y"), seen=step)
"""


def test_a_killed_run_goes_on_where_it_stood(archive: Archive, store_settings: Settings) -> None:
    """A kill: the next run (the command) goes on after the last saved instance and
    finishes every expired instance; nothing is deleted twice or left."""
    want = fill(archive)
    env = process_env(store_settings)
    run_killed(KILLED, env=env, at=11)
    resumed = run_command("retention", "--policy", "group:Invoice=10y", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert "(went on after 10 instances)" in resumed.stderr
    left = run_retention(archive, POLICY, dry_run=True, keep_book=False)
    assert left.expired_count == 0 and left.instances_seen == INSTANCES - want["expired"]
