"""Retention on both backends: policies by group and type from the last snapshot, legal
holds, the dry run's bytes, deletes through Archive.delete, the serve loop, the CLI."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from imixs_archive.archive.holds import get_hold, list_holds, place_hold, release_hold
from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.document.conventions import snapshot_time
from imixs_archive.document.model import Document
from imixs_archive.errors import ConfigError, DocumentError, StoreUnavailableError
from imixs_archive.services.retention import (
    Period,
    Policy,
    RetentionLoop,
    instance_retention,
    preview_retention,
    retention_sentence,
    run_retention,
)
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import ORIGIN, make_snapshot

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
POLICY = Policy.parse("group:Invoice=10y, type:snapshot-workitemarchive=1y, *=30y")
UNIQUE = b"only in the old invoice " * 400
SHARED = b"the shared template " * 300
A = "aaaaaaaa-0000-4000-8000-000000000001"  # Invoice, last 2013: expired (10y)
B = "bbbbbbbb-0000-4000-8000-000000000002"  # Contract, last 2013: kept (*=30y)
C = "cccccccc-0000-4000-8000-000000000003"  # Invoice, last 2012: expired, but held
D = "dddddddd-0000-4000-8000-000000000004"  # Ticket, archived type, last 2023-01: expired (1y)
E = "eeeeeeee-0000-4000-8000-000000000005"  # Invoice, first 2010, last 2020: kept


def snap(origin: str, when: dt.datetime, group: str, **extra: object) -> Document:
    doc = make_snapshot(0, origin=origin, modified=when, dollar_workflowgroup=group, **extra)
    doc["$uniqueid"] = f"{origin}-{int(when.timestamp() * 1000)}"
    return doc


def at(year: int, month: int = 1) -> dt.datetime:
    return dt.datetime(year, month, 1, 12, tzinfo=dt.UTC)


def fill(archive: Archive) -> None:
    archive.store(snap(A, at(2012), "Invoice", files={"a.pdf": UNIQUE, "t.docx": SHARED}))
    archive.store(snap(A, at(2013), "Invoice", files={"a.pdf": UNIQUE, "t.docx": SHARED}))
    archive.store(snap(B, at(2013), "Contract", files={"t.docx": SHARED}))
    archive.store(snap(C, at(2012), "Invoice"))
    archive.store(snap(D, at(2023), "Ticket", type="snapshot-workitemarchive"))
    archive.store(snap(E, at(2010), "Invoice"))
    archive.store(snap(E, at(2020), "Invoice"))
    place_hold(archive.backend, C, "case 4711", "tester", NOW)


def test_policy_rules_and_periods() -> None:
    assert POLICY.period_for("invoice", "x") == ("group:invoice", Period(10, "y"))
    assert POLICY.period_for("Ticket", "snapshot-workitemarchive") == (
        "type:snapshot-workitemarchive",
        Period(1, "y"),
    )
    assert POLICY.period_for("Other", "x") == ("*", Period(30, "y"))
    assert Policy.parse("group:A=5y").period_for("B", "x") is None
    assert Policy.parse("").empty
    assert Period(1, "y").after(dt.datetime(2024, 2, 29, tzinfo=dt.UTC)).date() == dt.date(
        2025, 2, 28
    )
    assert Period(90, "d").after(at(2024)) == at(2024) + dt.timedelta(days=90)
    for bad in ("group:A", "colour:red=1y", "*=ten years"):
        with pytest.raises(ConfigError, match="retention rule"):
            Policy.parse(bad)


def test_dry_run_reports_what_would_go_and_the_bytes(archive: Archive) -> None:
    fill(archive)
    report = run_retention(archive, POLICY, now=NOW, dry_run=True)
    assert sorted(e.uniqueid for e in report.expired) == [A, D]
    assert report.held == [C]
    assert report.instances_seen == 5
    # a.pdf is carried only by A's snapshots; the template also by B, so it stays
    assert (report.files, report.bytes) == (1, len(UNIQUE))
    assert report.snapshots_deleted == 0
    assert len(archive.list_instance(A)) == 2 and archive.list_instance(D)


def test_retention_deletes_expired_instances_and_respects_holds(archive: Archive) -> None:
    fill(archive)
    report = run_retention(archive, POLICY, now=NOW)
    assert report.snapshots_deleted == 3 and report.files == 1
    assert report.bytes > 0
    assert archive.list_instance(A) == [] and archive.list_instance(D) == []
    assert len(archive.list_instance(C)) == 1 and len(archive.list_instance(E)) == 2
    (kept,) = archive.list_instance(B)
    assert archive.load(kept).get_values("$file")[0]["t.docx"][1] is not None
    assert run_retention(archive, POLICY, now=NOW).snapshots_deleted == 0  # idempotent
    assert release_hold(archive.backend, C) and not release_hold(archive.backend, C)
    again = run_retention(archive, POLICY, now=NOW)
    assert [e.uniqueid for e in again.expired] == [C] and archive.list_instance(C) == []


def test_a_hold_placed_during_a_run_stops_the_deletion(archive: Archive) -> None:
    fill(archive)
    release_hold(archive.backend, C)
    planned = [e.uniqueid for e in preview_retention(archive, POLICY, NOW).expired]
    assert len(planned) == 3
    last = planned[-1]

    def hold_the_last(_done: object) -> None:
        place_hold(archive.backend, last, "placed while running", "tester", NOW)

    report = run_retention(archive, POLICY, now=NOW, progress=hold_the_last)
    assert last in report.held and last not in [e.uniqueid for e in report.expired]
    assert archive.list_instance(last)
    assert get_hold(archive.backend, last) is not None


def test_a_snapshot_arriving_after_the_plan_keeps_the_instance(archive: Archive) -> None:
    fill(archive)
    planned = [e.uniqueid for e in preview_retention(archive, POLICY, NOW).expired]
    second = planned[1]

    def revive(_done: object) -> None:  # after the first instance: a new save of the second
        archive.store(snap(second, at(2024, 5), "Invoice"))

    report = run_retention(archive, POLICY, now=NOW, progress=revive)
    assert second in report.skipped and len(archive.list_instance(second)) >= 2


def test_serve_loop_applies_the_policy(archive: Archive) -> None:
    fill(archive)
    loop = RetentionLoop(archive, POLICY, interval_ms=20)
    loop.start()
    try:
        deadline = time.monotonic() + 60
        while archive.list_instance(A) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        loop.close()
    assert archive.list_instance(A) == [] and loop.runs >= 1
    assert archive.list_instance(C)  # held


def test_a_run_that_succeeds_clears_the_error_of_one_that_failed(archive: Archive) -> None:
    """/api/jobs and the Monitor show a schedule's ``last_error``: after a run the store
    failed, the next good run clears it (it stayed, as if the loop were still failing)."""
    fill(archive)
    loop = RetentionLoop(archive, POLICY, interval_ms=60_000)
    loop.failed(StoreUnavailableError("the store went away"))  # as the loop reports it
    assert loop.last_error == "the store went away"
    loop.run_once()
    assert loop.last_error == ""


def test_cli_dry_run_and_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        fill(archive)
    data = ["--data-dir", str(store)]
    policy = "group:Invoice=10y,type:snapshot-workitemarchive=1y"
    assert main(["retention", "--dry-run", "--json", "--policy", policy, *data]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dry_run"] and out["expired_instances"] == 2 and out["bytes"] == len(UNIQUE)
    assert out["held"] == [C]
    assert main(["legal-hold", "place", A, "--reason", "audit", *data]) == 0
    assert main(["legal-hold", "list", "--json", *data]) == 0
    capsys.readouterr()
    assert main(["retention", "--policy", policy, *data]) == 0
    err = capsys.readouterr().err
    assert "1 instances (1 snapshots)" in err and "2 more held" in err
    capsys.readouterr()
    assert main(["legal-hold", "release", D, *data]) == 4  # not held: "not found"
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [
        f"imixs-archive: {D}: no legal hold; nothing released"
    ]
    assert main(["legal-hold", "place", " ", "--reason", "x", *data]) == 2
    for bad in ("3/2", "1", "a/b"):
        assert main(["retention", "--policy", policy, "--part", bad, *data]) == 2
        assert "--part: expected K/N" in capsys.readouterr().err
    assert main(["retention", "--dry-run", "--policy", policy, "--part", "2/2", *data]) == 0
    assert "part 2 of 2: " in capsys.readouterr().err
    assert "Traceback" not in capsys.readouterr().err
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        assert len(archive.list_instance(A)) == 2 and archive.list_instance(D) == []
        assert [h.uniqueid for h in list_holds(backend)] == [A, C]


def test_settings_of_retention() -> None:
    settings = load_settings({"ARCHIVE_RETENTION": "*=7y", "ARCHIVE_RETENTION_INTERVAL": "24h"})
    assert settings.retention_interval == 24 * 3_600_000
    assert Policy.parse(settings.retention).default == Period(7, "y")
    assert load_settings({}).retention_interval == 0


def test_an_instance_without_a_plausible_time_is_never_deleted_but_listed(
    archive: Archive,
) -> None:
    """The rule: retention decides on the time of an instance's newest snapshot (its id's,
    or ``$modified`` for an old id without one); a time before 2000 or in the future (only
    in archives copied as they were: new snapshots with one are refused) decides nothing."""
    future = "ffffffff-0000-4000-8000-000000000006"
    old_style = "1a2b3c4d5e6"  # a legacy origin id: its snapshots' ids carry no time
    archive.store(snap(future, at(2012), "Invoice"), copy=True)
    absurd = snap(future, at(2013), "Invoice")
    absurd["$uniqueid"] = f"{future}-999999999999999"  # year 33658
    archive.store(absurd, copy=True)
    legacy = snap(old_style, at(2012), "Invoice")
    legacy["$uniqueid"] = f"{old_style}-ba4de2b"
    archive.store(legacy)
    report = preview_retention(archive, POLICY, NOW)
    assert report.untimed == [future]
    assert [e.uniqueid for e in report.expired] == [old_style]  # its $modified: 2012
    run_retention(archive, POLICY, now=NOW)
    assert archive.exists(f"{future}-999999999999999")


@pytest.mark.parametrize(
    "suffix, says", [("999999999999999", "in the future"), ("1000", "before 2000")]
)
def test_a_new_snapshot_whose_id_has_an_impossible_time_is_refused(
    archive: Archive, suffix: str, says: str
) -> None:
    origin = A if len(suffix) > 12 else "abcdef12"  # a current id; a legacy one with millis
    doc = snap(origin, at(2012), "Invoice")
    doc["$uniqueid"] = f"{origin}-{suffix}"
    with pytest.raises(DocumentError, match=says):
        archive.store(doc)
    assert not archive.exists(f"{origin}-{suffix}")
    assert archive.store(doc, copy=True).new  # copying an archive takes what it holds


def test_the_retention_of_one_instance(archive: Archive) -> None:
    """What the policy decides for one instance: its rule, when its snapshots go, a hold."""
    archive.store(make_snapshot(0))
    archive.store(make_snapshot(1))
    policy = Policy.parse("group:Invoice=10y")
    found = instance_retention(archive, policy, ORIGIN, now=NOW)
    assert found is not None and found.due is not None and not found.held
    newest = str(make_snapshot(1)["$uniqueid"][0])
    assert found.due.rule == "group:Invoice=10y"
    assert found.due.last == snapshot_time(newest)
    assert found.due.ends == found.due.last.replace(year=found.due.last.year + 10)
    said = retention_sentence(found, dt.UTC)
    assert said.startswith(f"its snapshots go on {found.due.ends:%Y-%m-%d %H:%M} (UTC)")
    assert "group:Invoice=10y" in said
    kept = instance_retention(archive, Policy.parse("group:Ticket=1y"), ORIGIN, now=NOW)
    assert kept is not None and kept.due is None
    assert "no rule" in retention_sentence(kept, dt.UTC)
    place_hold(archive.backend, ORIGIN, "case 7", "tester", NOW)
    held = instance_retention(archive, policy, ORIGIN, now=NOW)
    assert held is not None and held.held and "legal hold" in retention_sentence(held, dt.UTC)
    assert instance_retention(archive, policy, "00000000-0000-4000-8000-00000000dead") is None


def test_a_group_rule_no_instance_has_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``group:Tiket=1y`` (a typo of Ticket) deletes nothing: the run says so in a warning
    line, names compare case-insensitively (``group:TICKET`` is no warning), and the exit
    code stays what the run gives."""
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        fill(archive)
    data = ["--data-dir", str(store)]
    assert main(["retention", "--dry-run", "--policy", "group:Tiket=1y", *data]) == 0
    warnings = [w for w in capsys.readouterr().err.splitlines() if w.startswith("warning")]
    assert warnings == [
        "warning: group:tiket: no instance in the archive is of that workflow group (names "
        "compare case-insensitively): the rule deletes nothing"
    ]
    policy = "group:TICKET=1y,group:Contract=90y"
    assert main(["retention", "--dry-run", "--policy", policy, *data]) == 0
    assert "warning" not in capsys.readouterr().err
