"""Commands open the store only when they use it."""

import io
from pathlib import Path

import pytest

from imixs_archive.cli import main


def test_hash_password_opens_no_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARCHIVE_DATA_DIR", raising=False)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"s3cret\n")))
    code = main(["hash-password", "--name", "anna", "--role", "reader", "--password-stdin"])
    assert code == 0 and capsys.readouterr().out.startswith("anna:reader:")
    assert list(tmp_path.iterdir()) == []


def test_store_commands_still_open_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A command that writes creates the store; one that only reads then finds it."""
    samples = Path(__file__).resolve().parents[2] / "samples"
    assert main(["import", str(samples), "--data-dir", str(tmp_path / "store")]) == 0
    assert (tmp_path / "store").is_dir()
    assert main(["stats", "--data-dir", str(tmp_path / "store")]) == 0
    snapshot = "270e3a6d-a0e4-4875-89f1-3b418859abe5-1700000000000"
    assert main(["delete", snapshot, "--data-dir", str(tmp_path / "store")]) == 4


NO_ARCHIVE_COMMANDS = [
    ["retention", "--dry-run", "--policy", "*=1d"],
    ["retention", "--policy", "*=1d"],
    ["legal-hold", "list"],
    ["legal-hold", "release", "270e3a6d-a0e4-4875-89f1-3b418859abe5"],
    ["legal-hold", "place", "270e3a6d-a0e4-4875-89f1-3b418859abe5", "--reason", "x"],
    ["sync", "--status"],
    ["sync", "--retry-all"],
    ["delete", "270e3a6d-a0e4-4875-89f1-3b418859abe5-1700000000000"],
]


@pytest.mark.parametrize("command", NO_ARCHIVE_COMMANDS, ids=" ".join)
def test_commands_on_a_folder_without_an_archive_say_so_and_create_nothing(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARCHIVE_DATA_DIR", raising=False)
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", "http://127.0.0.1:9/api")
    assert main([*command, "--data-dir", str(tmp_path / "empty")]) == 4
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("imixs-archive: no archive in ")
    assert len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_doctor_reports_no_archive_as_a_finding_and_creates_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARCHIVE_DATA_DIR", raising=False)
    monkeypatch.delenv("WORKFLOW_SERVICE_ENDPOINT", raising=False)
    assert main(["doctor", "--data-dir", str(tmp_path / "empty")]) == 1
    out = capsys.readouterr().out
    assert "FAIL  store: no archive in " in out, out
    assert list(tmp_path.iterdir()) == []
