"""Damage in the embedded store's own file (a page of ``archive.db`` overwritten, as a
failing disk or a torn write leaves it) and rows that disagree with the snapshots, as the
commands see them: ``verify`` exits 5 naming the table (never 6, never "clean"),
``doctor`` reports the damaged file with the way out, and the way out it prints works:
``export --to NEWDIR`` into a new store put in place of the damaged one (with what export
cannot read imported again from a backup), ``stats --reconcile`` for rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.archive.verify_fill import fill

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.document.conventions import METADATA_ID
from imixs_archive.storage.model import SNAPSHOTS, SNAPSHOTS_BY_MODIFIED
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.damage import damage_page

TABLE_LINE = re.compile(r"^(\S+): \d+ (?:row\(s\) disagree|problem\(s\) in the store's file)", re.M)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "archive-data"
    with SQLiteBackend(folder) as backend, Archive(backend) as archive:
        fill(archive, instances=5)
    return folder


def _ids(store: Path) -> list[str]:
    with SQLiteBackend(store) as backend:
        return sorted(
            r["snapshot"] for r in backend.scan(SNAPSHOTS) if r["snapshot"] != METADATA_ID
        )


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    said = capsys.readouterr()
    assert "Traceback" not in said.err
    return code, said.out + said.err


def test_a_damaged_index_is_named_and_the_way_out_doctor_prints_works(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _ids(store)
    damage_page(store, "snapshots_by_uniqueid")
    code, said = run(capsys, "verify", "--data-dir", str(store))
    assert code == 5, said
    assert set(TABLE_LINE.findall(said)) == {"snapshots_by_uniqueid"}, said
    assert "export --to NEWDIR" in said
    code, said = run(capsys, "doctor", "--data-dir", str(store))
    assert code == 1
    line = next(x for x in said.splitlines() if "store file:" in x)
    assert line.lstrip().startswith("FAIL") and "snapshots_by_uniqueid" in line
    assert "export --to NEWDIR" in line and "put NEWDIR in its place" in line
    # the way out: export what can be read, put the new store in place of the damaged one
    new = tmp_path / "new"
    assert run(capsys, "export", "--data-dir", str(store), "--to", str(new))[0] == 0
    store.rename(tmp_path / "damaged")
    new.rename(store)
    code, said = run(capsys, "verify", "--data-dir", str(store))
    assert code == 0, said
    assert _ids(store) == ids
    code, said = run(capsys, "doctor", "--data-dir", str(store))
    assert "store file: SQLite's check of archive.db found no damage" in said


def test_damaged_snapshots_are_exported_as_far_as_they_can_be_read_the_rest_imported(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _ids(store)
    backup = tmp_path / "backup"
    assert (
        run(capsys, "backup", str(backup), "--create", "--all-snapshots", "--data-dir", str(store))[
            0
        ]
        == 0
    )
    damage_page(store, "snapshots")
    code, said = run(capsys, "verify", "--data-dir", str(store))
    assert code == 5 and set(TABLE_LINE.findall(said)) == {"snapshots"}, said
    assert "export --to NEWDIR" in said and "import DIR" in said
    new = tmp_path / "new"
    code, said = run(capsys, "export", "--data-dir", str(store), "--to", str(new))
    assert code == 5 and ids[0] in said  # each snapshot it could not read, named
    assert run(capsys, "import", str(backup), "--data-dir", str(new))[0] == 0
    assert run(capsys, "verify", "--data-dir", str(new))[0] == 0
    assert _ids(new) == ids


def test_verify_full_checks_the_indexes_of_the_file(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage_page(store, "snapshots", index=True)
    code, said = run(capsys, "verify", "--full", "--data-dir", str(store))
    assert code == 5 and set(TABLE_LINE.findall(said)) == {"snapshots"}, said
    code, said = run(capsys, "verify", "--slice", "--full", "--data-dir", str(store))
    assert code == 2 and "--full" in said


def test_rows_that_disagree_are_named_and_stats_reconcile_rebuilds_them(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SQLiteBackend(store) as backend:
        row = next(backend.scan(SNAPSHOTS_BY_MODIFIED))
        backend.delete(SNAPSHOTS_BY_MODIFIED, row)
    code, said = run(capsys, "verify", "--data-dir", str(store))
    assert code == 5 and set(TABLE_LINE.findall(said)) == {"snapshots_by_modified"}, said
    assert row["snapshot"] in said and "imixs-archive stats --reconcile" in said
    code, said = run(capsys, "stats", "--reconcile", "--data-dir", str(store))
    assert code == 0 and "snapshots_by_modified: 1 row(s) rebuilt" in said, said
    assert run(capsys, "verify", "--data-dir", str(store))[0] == 0


def test_on_a_terminal_the_bars_totals_stop_no_command_on_a_damaged_store(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bar's total comes from the archive's figures, which read the day index: on a
    damaged store the bar goes without a total, and verify still reports what it found
    and export, the way out, still copies (both gave up at the total with one line)."""
    damage_page(store, "snapshots_by_modified")
    monkeypatch.setattr(type(capsys._capture.err.tmpfile), "isatty", lambda _self: True)  # type: ignore[union-attr]
    code, said = run(capsys, "verify", "--data-dir", str(store))
    assert code == 5, said
    assert "snapshots_by_modified" in set(TABLE_LINE.findall(said)), said
    assert "export --to NEWDIR" in said
    code, said = run(capsys, "export", "--data-dir", str(store), "--to", str(tmp_path / "new"))
    assert code == 0, said
