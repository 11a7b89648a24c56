"""Commands open the store only when they use it."""

import io
from pathlib import Path

import pytest

from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.errors import NotFoundError
from imixs_archive.storage.factory import open_backend
from support.backends import CASSANDRA_SKIP, cassandra_env, cassandra_target, random_keyspace
from support.snapshots import make_snapshot


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


LEDGER_COMMANDS = [
    ["head"],
    ["key"],
    ["checkpoint"],
    ["verify"],
    ["verify", "--json", "--restart"],
    ["proof", str(make_snapshot(1).get_first("$uniqueid"))],
    ["consistency", "0"],
    ["entries", "0"],
]
"""Every ``ledger`` command that opens a store, but ``init`` (which creates one)."""

NO_ARCHIVE_COMMANDS = [
    ["retention", "--dry-run", "--policy", "*=1d"],
    ["retention", "--policy", "*=1d"],
    ["legal-hold", "list"],
    ["legal-hold", "release", "270e3a6d-a0e4-4875-89f1-3b418859abe5"],
    ["legal-hold", "place", "270e3a6d-a0e4-4875-89f1-3b418859abe5", "--reason", "x"],
    ["sync", "--status"],
    ["sync", "--retry-all"],
    ["delete", "270e3a6d-a0e4-4875-89f1-3b418859abe5-1700000000000"],
    *(["ledger", *command] for command in LEDGER_COMMANDS),  # no signing key either
]


@pytest.mark.parametrize("command", NO_ARCHIVE_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("folder", ["missing", "empty"])
def test_commands_on_a_folder_without_an_archive_say_so_and_create_nothing(
    command: list[str],
    folder: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A mistyped --data-dir, to a folder that is not there or is empty."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARCHIVE_DATA_DIR", raising=False)
    monkeypatch.delenv("ARCHIVE_LEDGER_KEY", raising=False)
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", "http://127.0.0.1:9/api")
    data_dir = tmp_path / "typo"
    if folder == "empty":
        data_dir.mkdir()
    assert main([*command, "--data-dir", str(data_dir)]) == 4
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"imixs-archive: no archive in {data_dir} ")
    assert len(err.strip().splitlines()) == 1
    assert [path.name for path in tmp_path.rglob("*")] == ([] if folder == "missing" else ["typo"])


@pytest.mark.cassandra
@pytest.mark.parametrize("command", LEDGER_COMMANDS, ids=" ".join)
def test_ledger_commands_on_a_keyspace_without_an_archive_say_so_and_create_nothing(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A mistyped keyspace name: exit 4, no keyspace, no signing key (issue 46)."""
    if not cassandra_target():
        pytest.skip(CASSANDRA_SKIP)
    keyspace = random_keyspace("archive_typo_")
    for name, value in cassandra_env(keyspace).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ARCHIVE_LEDGER_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["ledger", *command]) == 4
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith(f"imixs-archive: no archive in Cassandra keyspace '{keyspace}'")
        assert list(tmp_path.iterdir()) == []  # no signing key, no data folder
    finally:
        created = _keyspace_made(keyspace)
    assert not created


def _keyspace_made(keyspace: str) -> bool:
    """Whether the keyspace exists (dropped again when it does)."""
    try:
        store = open_backend(load_settings(cassandra_env(keyspace)), create=False)
    except NotFoundError:
        return False
    try:
        store.drop_keyspace()
    finally:
        store.close()
    return True


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
