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
    assert main(["stats", "--data-dir", str(tmp_path / "store")]) == 0
    assert (tmp_path / "store").is_dir()
