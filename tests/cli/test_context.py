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
    assert (
        main(
            [
                "delete",
                "270e3a6d-a0e4-4875-89f1-3b418859abe5-1700000000000",
                "--data-dir",
                str(tmp_path / "store"),
            ]
        )
        == 4
    )
    assert (tmp_path / "store").is_dir()
    assert main(["stats", "--data-dir", str(tmp_path / "store")]) == 0
