"""Habits a command-line user brings along: a global option before the command, the
format from the file name, no binary on a terminal, counts that are counts, and ranges
that are not backwards."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from imixs_archive.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SNAPSHOT = "7c9e6679-7425-40de-944b-e07fc1f90ae7-1709626500125"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The samples imported; ARCHIVE_DATA_DIR points elsewhere (an empty folder)."""
    path = tmp_path / "store"
    assert main(["import", str(SAMPLES), "--data-dir", str(path)]) == 0
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(tmp_path / "elsewhere"))
    return path


def _ids(out: str) -> list[str]:
    return [json.loads(line)["snapshot"] for line in out.splitlines()]


def test_data_dir_before_the_command_works_as_after_it(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["--data-dir", str(store), "list", "--json"]) == 0
    before = _ids(capsys.readouterr().out)
    assert main(["list", "--json", "--data-dir", str(store)]) == 0
    assert _ids(capsys.readouterr().out) == before and len(before) == 9


def test_export_table_takes_the_format_from_the_extension(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "x.csv"
    assert main(["export-table", str(table), "--items", "subject", "--data-dir", str(store)]) == 0
    lines = table.read_text().splitlines()
    assert lines[0] == "snapshot,uniqueid,modified,subject"
    assert len(lines) == 10  # a header and nine rows, as text
    parquet = tmp_path / "x.parquet"
    assert main(["export-table", str(parquet), "--items", "subject", "--data-dir", str(store)]) == 0
    assert pq.read_table(parquet).num_rows == 9
    forced = tmp_path / "y.csv"
    args = ["export-table", str(forced), "--items", "subject", "--format", "parquet"]
    assert main([*args, "--data-dir", str(store)]) == 0
    assert pq.read_table(forced).num_rows == 9


@pytest.mark.parametrize("name", ["x.xlsx", "x.json", "x"])
def test_export_table_refuses_a_name_of_a_format_it_does_not_write(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """``x.xlsx`` was written as Parquet under that name; ``--format`` still decides."""
    capsys.readouterr()
    args = ["export-table", str(tmp_path / name), "--items", "subject", "--data-dir", str(store)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "the name tells no format this writes (.csv, .parquet)" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / name).exists()
    assert main([*args, "--format", "parquet"]) == 0
    assert pq.read_table(tmp_path / name).num_rows == 9


class _Terminal(io.TextIOWrapper):
    def isatty(self) -> bool:
        return True


def test_file_refuses_to_write_binary_to_a_terminal(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = _Terminal(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["file", SNAPSHOT, "Ticket-1.pdf", "--data-dir", str(store)]) == 2
    assert "-o FILE" in capsys.readouterr().err
    assert terminal.buffer.getvalue() == b""
    written = tmp_path / "t.pdf"
    args = ["file", SNAPSHOT, "Ticket-1.pdf", "-o", str(written)]
    assert main([*args, "--data-dir", str(store)]) == 0
    assert written.read_bytes().startswith(b"%PDF")


def test_a_negative_limit_is_refused(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["list", "--limit", "-1", "--data-dir", str(store)])
    assert exited.value.code == 2
    assert "--limit: must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["analyze", "aggregates"],
        ["analyze", "leadtimes"],
        ["export-table", "out.csv", "--items", "subject"],
    ],
)
def test_a_reversed_date_range_is_an_error(
    store: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    args = [*command, "--from", "2024-03-10", "--to", "2024-03-01", "--data-dir", str(store)]
    assert main(args) == 2
    assert "--to 2024-03-01 is before --from 2024-03-10" in capsys.readouterr().err


def test_a_reversed_backup_range_is_an_error(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["backup", str(tmp_path / "bk"), "--from", "2024-03-10", "--to", "2024-03-01"]
    assert main([*args, "--data-dir", str(store)]) == 2
    assert "is before --from" in capsys.readouterr().err
    assert not (tmp_path / "bk").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["backup", "bk"],
        ["analyze", "aggregates"],
        ["analyze", "leadtimes"],
        ["analyze", "eventlog", "out.xes"],
        ["export-table", "out.csv", "--items", "subject"],
    ],
)
@pytest.mark.parametrize("option", ["--from", "--to"])
def test_a_time_given_for_a_day_is_refused(
    store: Path, capsys: pytest.CaptureFixture[str], command: list[str], option: str
) -> None:
    """These ranges take whole days: a time was cut off silently (``list --from
    2024-03-05T12:00`` listed the morning too)."""
    with pytest.raises(SystemExit) as exited:
        main([*command, option, "2024-03-05T12:00", "--data-dir", str(store)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "a day (YYYY-MM-DD) is wanted, not a time: '2024-03-05T12:00'" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["backup", "{tmp}/bk", "--create"],
        ["analyze", "aggregates"],
        ["analyze", "leadtimes"],
        ["analyze", "eventlog", "{tmp}/log.xes"],
        ["export-table", "{tmp}/out.csv", "--items", "subject"],
        ["export-table", "{tmp}/out.parquet", "--items", "subject", "--newest"],
        ["restore"],
    ],
    ids=lambda command: " ".join(c for c in command if "{" not in c),
)
def test_a_range_without_snapshots_is_not_found_for_every_range_command(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """One rule (README, exit codes): 4, one line, nothing written. ``backup`` exited 0,
    ``analyze aggregates`` 0 with a row of nothing, ``analyze eventlog`` 4."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = [part.replace("{tmp}", str(out_dir)) for part in command]
    capsys.readouterr()
    code = main([*args, "--from", "2020-01-01", "--to", "2020-01-31", "--data-dir", str(store)])
    out, err = capsys.readouterr()
    assert code == 4, err
    assert out == "" and len(err.strip().splitlines()) == 1 and "no snapshots" in err
    assert list(out_dir.iterdir()) == []
