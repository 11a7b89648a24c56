"""Legal holds stack per case (issue 46, item 3): a hold placed for a second case leaves
the first; releasing one case leaves the instance held for the others; a release that
does not say which of several is refused; each case's placing and release is an entry of
the ledger of its own; a hold an earlier version wrote (one row per instance) still
holds. On every backend."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import ConfigError, LegalHoldError, NotFoundError
from imixs_archive.ledger.entries import HOLD_PLACED, HOLD_RELEASED, Entry
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.verify import verify_ledger
from imixs_archive.storage.model import ARCHIVE_LEGAL_HOLDS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import ORIGIN, make_snapshot

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(
        {
            "ARCHIVE_DATA_DIR": str(tmp_path / "keys"),
            "ARCHIVE_LEDGER_CHECKPOINT_DIR": str(tmp_path / "witness"),
        }
    )


def _logged(archive: Archive, settings: Settings) -> list[Entry]:
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain()
    entries = [Entry.decode(row.text) for row in archive.ledger.entries()]
    return [e for e in entries if e.kind in (HOLD_PLACED, HOLD_RELEASED)]


def test_holds_of_two_cases_stack(archive: Archive, settings: Settings) -> None:
    snapshot_id = archive.store(make_snapshot(0)).snapshot_id
    archive.holds.place(ORIGIN, "case 4711", "mia", NOW)
    archive.holds.place(ORIGIN, "case 4712", "tom", NOW + dt.timedelta(days=1))
    assert [(h.reason, h.placed_by) for h in archive.holds.list()] == [
        ("case 4711", "mia"),
        ("case 4712", "tom"),
    ]
    with pytest.raises(LegalHoldError) as refused:
        archive.delete(snapshot_id)
    why = refused.value.why
    assert "for 2 cases" in why and "case 4711" in why and "case 4712" in why
    assert "--reason CASE" in why
    with pytest.raises(ConfigError, match="held for 2 cases"):
        archive.holds.release(ORIGIN, "ann")
    with pytest.raises(NotFoundError, match="no hold for 'case 9'"):
        archive.holds.release(ORIGIN, "ann", "case 9")
    released = archive.holds.release(ORIGIN, "ann", "case 4712")
    assert released is not None and released.reason == "case 4712"
    assert [h.reason for h in archive.holds.of(ORIGIN)] == ["case 4711"]
    with pytest.raises(LegalHoldError, match="case 4711"):
        archive.delete(snapshot_id)
    assert archive.exists(snapshot_id)
    # the last hold needs no name
    last = archive.holds.release(ORIGIN, "ann")
    assert last is not None and last.reason == "case 4711"
    assert archive.holds.release(ORIGIN, "ann") is None
    entries = _logged(archive, settings)
    assert sorted((e.kind, e.case, e.by) for e in entries) == [
        (HOLD_PLACED, "case 4711", "mia"),
        (HOLD_PLACED, "case 4712", "tom"),
        (HOLD_RELEASED, "case 4711", "ann"),
        (HOLD_RELEASED, "case 4712", "ann"),
    ]
    assert verify_ledger(archive, settings).ok
    assert archive.delete(snapshot_id).existed


def test_a_hold_an_earlier_version_wrote_still_holds(archive: Archive, settings: Settings) -> None:
    """A row of ``archive_legal_holds`` (one per instance, before store version 5),
    logged as that version logged it: it protects, lists, stacks with a new case and is
    released by its reason with an entry that pairs with its own."""
    snapshot_id = archive.store(make_snapshot(0)).snapshot_id
    at = int(NOW.timestamp() * 1000)
    archive.ledger.enqueue(Entry(HOLD_PLACED, ORIGIN, at, "old", reason="case 4711"))
    row = {"uniqueid": ORIGIN, "reason": "case 4711", "placed": at, "placed_by": "old"}
    archive.backend.put(ARCHIVE_LEGAL_HOLDS, [row])
    assert verify_ledger(archive, settings).ok
    assert [(h.reason, h.placed_by, h.placed) for h in archive.holds.list()] == [
        ("case 4711", "old", NOW)
    ]
    with pytest.raises(LegalHoldError, match="case 4711"):
        archive.delete(snapshot_id)
    archive.holds.place(ORIGIN, "case 4712", "mia", NOW + dt.timedelta(days=1))
    assert [h.reason for h in archive.holds.list()] == ["case 4711", "case 4712"]
    assert archive.holds.release(ORIGIN, "ann", "case 4711") is not None
    assert archive.backend.get(ARCHIVE_LEGAL_HOLDS, {"uniqueid": ORIGIN}) is None
    with pytest.raises(LegalHoldError, match="case 4712"):
        archive.delete(snapshot_id)
    released = [e for e in _logged(archive, settings) if e.kind == HOLD_RELEASED]
    assert [(e.case, e.subject) for e in released] == [("", f"hold:{ORIGIN}")]
    report = verify_ledger(archive, settings)
    assert report.ok and not report.warnings


def test_cli_stacks_and_names_the_case_to_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        snapshot_id = archive.store(make_snapshot(0)).snapshot_id
    data = ["--data-dir", str(store)]
    for case in ("case 4711", "case 4712"):
        assert main(["legal-hold", "place", ORIGIN, "--reason", case, *data]) == 0
    capsys.readouterr()
    assert main(["legal-hold", "list", "--json", *data]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(h["uniqueid"], h["reason"]) for h in listed] == [
        (ORIGIN, "case 4711"),
        (ORIGIN, "case 4712"),
    ]
    assert main(["legal-hold", "release", ORIGIN, *data]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "case 4711" in err and "case 4712" in err and "reason" in err
    assert main(["legal-hold", "release", ORIGIN, "--reason", "case 4712", *data]) == 0
    assert "still held for 1 other case" in capsys.readouterr().out
    assert main(["delete", snapshot_id, *data]) == 8
    assert "case 4711" in capsys.readouterr().err
    assert main(["legal-hold", "release", ORIGIN, *data]) == 0
    assert "released (case 4711)" in capsys.readouterr().out
    assert main(["delete", snapshot_id, *data]) == 0
