"""Exit codes as the README's table says (2 settings and arguments, 3 bad input, 4 not
found, 7 workflow), and ordinary mistakes end as clear one-line errors, never as
"internal error" (70)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from imixs_archive.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SNAPSHOT = "7c9e6679-7425-40de-944b-e07fc1f90ae7-1709626500125"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store"
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(path))
    monkeypatch.delenv("WORKFLOW_SERVICE_ENDPOINT", raising=False)
    assert main(["import", str(SAMPLES / "ticket-1.xml")]) == 0
    return path


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "internal error" not in err
    return err


def test_import_of_bad_input_is_3(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text('<data><document><item name="x"></document>')
    assert main(["import", str(bad)]) == 3
    assert "malformed XML" in _err(capsys)


def test_import_of_a_missing_file_is_4(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(tmp_path / "nothing.xml")]) == 4
    assert "no such file or folder" in _err(capsys)


def test_import_of_a_folder_with_nothing_to_import_is_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing found is not a success, and no archive is created for it."""
    empty = tmp_path / "emptydir"
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.txt").write_text("not an input")
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(tmp_path / "store"))
    assert main(["import", str(empty)]) == 4
    err = _err(capsys)
    assert err == f"imixs-archive: nothing to import: no .xml or .json files in {empty}\n"
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("command", [["restore", "--uniqueid", "x"], ["sync", "--once"]])
def test_a_missing_workflow_endpoint_is_2_for_restore_and_sync(
    store: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    assert main(command) == 2
    assert "WORKFLOW_SERVICE_ENDPOINT" in _err(capsys)


def test_an_output_folder_that_does_not_exist_is_2(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no-such-folder" / "x.xml"
    assert main(["get", SNAPSHOT, "-o", str(target)]) == 2
    assert f"cannot write {target}: No such file or directory" in _err(capsys)


def test_an_unwritable_path_is_2(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    assert main(["get", SNAPSHOT, "-o", str(a_file / "x.xml")]) == 2
    assert "Not a directory" in _err(capsys)
    assert main(["backup", str(a_file / "tree")]) == 2
    assert "Not a directory" in _err(capsys)


def test_a_port_out_of_range_is_2(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "99999"]) == 2
    assert "cannot listen on 127.0.0.1:99999" in _err(capsys)


def test_hash_password_without_a_terminal_is_2(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["hash-password", "--name", "anna"]) == 2
    assert "--password-stdin" in _err(capsys)
    monkeypatch.setattr(sys, "stdin", io.StringIO("s3cret\n"))
    assert main(["hash-password", "--name", "anna", "--password-stdin"]) == 0
    assert capsys.readouterr().out.startswith("anna:manager:")
