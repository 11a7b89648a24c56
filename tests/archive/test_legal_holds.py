"""Legal holds stop every deletion of a held instance's snapshots, on every backend: an
explicit delete (archive, CLI) is refused with the hold's reason and changes nothing, the
``$snapshot.history`` cleanup keeps them (with a warning), a workflow's remove event keeps
them; releasing the hold lets each go again."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import pytest

from imixs_archive.archive.holds import bytes_only_in, place_hold, release_hold
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.cli import main
from imixs_archive.errors import LegalHoldError, NotFoundError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import TABLES
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.java_rows import java_store_snapshot
from support.snapshots import ORIGIN, content_of, make_snapshot

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
PDF = b"held evidence " * 5000
OTHER = "0abcdef0-0000-4000-8000-000000000009"


def rows(backend: Backend) -> dict[str, list[dict[str, object]]]:
    """Every row of every table (the held instance's data must not change at all)."""
    return {
        table.name: sorted((dict(r) for r in backend.scan(table)), key=repr) for table in TABLES
    }


def test_delete_of_a_held_snapshot_is_refused_and_changes_nothing(archive: Archive) -> None:
    ids = [archive.store(make_snapshot(s, files={"a.pdf": PDF})).snapshot_id for s in range(2)]
    place_hold(archive.backend, ORIGIN, "case 4711", "tester", NOW)
    before = rows(archive.backend)
    with pytest.raises(LegalHoldError) as refused:
        archive.delete(ids[0])
    message = str(refused.value)
    assert ids[0] in message and ORIGIN in message and "legal hold" in message
    assert "case 4711" in message and "legal-hold release" in message
    assert refused.value.exit_code == 8
    assert rows(archive.backend) == before
    assert content_of(archive.load(ids[0]), "a.pdf") == PDF
    # a snapshot the held instance does not have is simply not there (not a refusal)
    assert archive.delete(f"{ORIGIN}-1").existed is False
    assert release_hold(archive.backend, ORIGIN)
    assert archive.delete(ids[0]).existed and archive.list_instance(ORIGIN) == [ids[1]]
    assert verify(archive.backend).ok


def test_a_hold_on_one_instance_leaves_others_deletable(archive: Archive) -> None:
    held = archive.store(make_snapshot(0)).snapshot_id
    free = archive.store(make_snapshot(0, origin=OTHER)).snapshot_id
    place_hold(archive.backend, ORIGIN, "audit", "tester", NOW)
    assert archive.delete(free).existed
    with pytest.raises(LegalHoldError):
        archive.delete(held)
    assert archive.exists(held)


def test_history_cleanup_keeps_every_snapshot_of_a_held_instance(archive: Archive) -> None:
    first = archive.store(make_snapshot(0, files={"a.pdf": PDF})).snapshot_id
    place_hold(archive.backend, ORIGIN, "case 4711", "tester", NOW)
    before = rows(archive.backend)
    result = archive.store(make_snapshot(1, dollar_snapshot__history=1))
    assert result.new and result.deleted == []
    (warning,) = result.warnings
    assert "legal hold" in warning and "case 4711" in warning and "kept" in warning
    assert archive.list_instance(ORIGIN) == [result.snapshot_id, first]
    assert content_of(archive.load(first), "a.pdf") == PDF
    for table, found in before.items():  # nothing of the first snapshot went
        if table == "archive_day_changes":
            continue  # the day's change stamp, new with each snapshot of the day
        after = rows(archive.backend)[table]
        assert all(row in after for row in found), table
    # archiving the same snapshot again (the cleanup is finished on a re-run) keeps them too
    again = archive.store(make_snapshot(1, dollar_snapshot__history=1))
    assert not again.new and again.deleted == [] and len(again.warnings) == 1
    release_hold(archive.backend, ORIGIN)
    later = archive.store(make_snapshot(2, dollar_snapshot__history=1))
    assert sorted(later.deleted) == sorted([first, result.snapshot_id])
    assert archive.list_instance(ORIGIN) == [later.snapshot_id] and not later.warnings
    assert verify(archive.backend).ok


def test_cli_delete_refuses_a_held_snapshot_with_exit_8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        held = archive.store(make_snapshot(0, files={"a.pdf": PDF})).snapshot_id
        free = archive.store(make_snapshot(0, origin=OTHER)).snapshot_id
    data = ["--data-dir", str(store)]
    assert main(["legal-hold", "place", ORIGIN, "--reason", "court order 12", *data]) == 0
    capsys.readouterr()
    assert main(["delete", held, free, *data]) == 8
    out, err = capsys.readouterr()
    assert f"{free}: deleted" in out and held not in out
    assert f"{held}: not deleted" in err and "court order 12" in err and "Traceback" not in err
    assert main(["get", held, "--no-files", *data]) == 0
    capsys.readouterr()
    assert main(["legal-hold", "release", ORIGIN, *data]) == 0
    assert main(["delete", held, *data]) == 0
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        assert not archive.exists(held) and not archive.exists(free)
    capsys.readouterr()
    assert main(["legal-hold", "list", "--json", *data]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_cli_tables_name_the_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend):
        place_hold(
            backend, ORIGIN, "case 4711", "tester", dt.datetime(2024, 10, 27, 0, 30, tzinfo=dt.UTC)
        )
    monkeypatch.setenv("ARCHIVE_TIMEZONE", "America/New_York")
    assert main(["legal-hold", "list", "--data-dir", str(store)]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split("\t")[1] == "placed (America/New_York)"
    assert row.split("\t")[1] == "2024-10-26 20:30:00"  # EDT, UTC-4


def test_the_bytes_a_delete_releases_count_the_files_of_snapshots_java_wrote(
    archive: Archive, backend: Backend
) -> None:
    """Snapshots the Java service wrote have none of this archive's file rows: their files
    are found from their items (``md5checksum``), sized from the stored pieces, and counted
    unless a snapshot that stays carries them too."""
    own = random.Random(41).randbytes(300_000)
    shared = random.Random(42).randbytes(120_000)
    java = make_snapshot(1, files={"own.bin": own, "shared.bin": shared})
    stays = make_snapshot(2, files={"shared.bin": shared})
    java_id = java_store_snapshot(backend, java)
    java_store_snapshot(backend, stays)
    assert bytes_only_in(backend, [java_id]) == (1, len(own))
    ours = archive.store(make_snapshot(3, origin=OTHER, files={"x.bin": own[:5000]}))
    assert bytes_only_in(backend, [java_id, ours.snapshot_id]) == (2, len(own) + 5000)


def test_a_hold_on_an_id_the_archive_does_not_hold_is_refused_unless_ahead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped id is not "held" while the real instance stays unprotected: exit 4 and
    nothing placed; ``--ahead`` holds it all the same and says so."""
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        snapshot_id = archive.store(make_snapshot(0)).snapshot_id
    data = ["--data-dir", str(store)]
    typo = ORIGIN[:-1] + "2"
    for wrong in (typo, snapshot_id):
        assert main(["legal-hold", "place", wrong, "--reason", "case 4711", *data]) == 4
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1
        assert "holds no snapshot of this process instance" in err and "--ahead" in err
    assert f"its process instance is {ORIGIN}" in err
    assert main(["legal-hold", "list", "--json", *data]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["legal-hold", "place", typo, "--reason", "case 4711", "--ahead", *data]) == 0
    assert "ahead of its data" in capsys.readouterr().out
    assert main(["legal-hold", "place", ORIGIN, "--reason", "case 4711", *data]) == 0
    assert "ahead" not in capsys.readouterr().out
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        assert [h.uniqueid for h in archive.holds.list()] == sorted([ORIGIN, typo])
        with pytest.raises(NotFoundError):
            archive.holds.place(OTHER, "x", "mia", NOW)
