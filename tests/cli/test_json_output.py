"""``--json`` on the commands that lacked it (import, backup, export, delete, copy-store,
doctor, ``ledger head``): standard output is one JSON document, as every other ``--json``
prints it, with the counts the text says, and the exit code is the text's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SNAPSHOT = "7c9e6679-7425-40de-944b-e07fc1f90ae7-1709626500125"


def _json(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> Any:
    capsys.readouterr()
    assert main(list(args)) == code
    out = capsys.readouterr().out
    return json.loads(out)  # the whole output: one document, nothing else


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store"
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(path))
    monkeypatch.delenv("WORKFLOW_SERVICE_ENDPOINT", raising=False)
    return path


def test_import_json(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, "import", str(SAMPLES), "--json")
    assert (data["new"], data["present"], data["failed"], data["exit_code"]) == (9, 0, 0, 0)
    assert data["new_bytes"] > 0 and data["failures"] == [] and data["warnings"] == []
    again = _json(capsys, "import", str(SAMPLES), "--json")
    assert (again["new"], again["present"]) == (0, 9)


def test_backup_and_export_json(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(SAMPLES)]) == 0
    tree = tmp_path / "tree"
    data = _json(capsys, "backup", str(tree), "--create", "--json")
    assert (data["written"], data["current"], data["failed"]) == (3, 0, 0)
    assert data["bytes_written"] > 0 and data["resumed"] is None and data["to"] == str(tree)
    assert (data["part"], data["parts"]) == (1, 1)
    other = tmp_path / "other"
    data = _json(capsys, "export", "--to", str(other), "--json")
    assert (data["copied"], data["present"], data["failed"], data["holds"]) == (9, 0, 0, 0)
    assert data["to"] == str(other)


def test_delete_json(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(SAMPLES)]) == 0
    missing = "7c9e6679-7425-40de-944b-e07fc1f90ae7-1600000000000"
    data = _json(capsys, "delete", SNAPSHOT, missing, "--json", code=4)
    assert data == {"deleted": [SNAPSHOT], "missing": [missing], "refused": []}
    uid = SNAPSHOT.rsplit("-", 1)[0]
    assert main(["legal-hold", "place", uid, "--reason", "case 1"]) == 0
    capsys.readouterr()
    assert main(["list", "--uniqueid", uid, "--json"]) == 0
    listed = [json.loads(line)["snapshot"] for line in capsys.readouterr().out.splitlines()]
    other = listed[0]
    data = _json(capsys, "delete", other, "--json", code=8)
    assert data["deleted"] == [] and [r["snapshot"] for r in data["refused"]] == [other]
    assert "legal hold" in data["refused"][0]["why"]


def test_copy_store_json(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(SAMPLES)]) == 0
    data = _json(capsys, "copy-store", str(tmp_path / "copy"), "--json")
    assert data["verified"] is None and Path(data["copy"]).is_file()
    data = _json(capsys, "copy-store", str(tmp_path / "copy2"), "--verify", "--json")
    assert data["verified"]["ok"] is True and data["verified"]["snapshots"] == 9


def test_doctor_json(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(SAMPLES)]) == 0
    capsys.readouterr()
    code = main(["doctor"])
    text = capsys.readouterr().out
    data = _json(capsys, "doctor", "--json", code=code)
    assert data["failed"] is (code == 1)
    assert {"area", "status", "message"} <= set(data["checks"][0])
    assert all(f"{check['area']}: {check['message']}" in text for check in data["checks"])
    assert data["workflow_side"] and all(line in text for line in data["workflow_side"])


def test_ledger_head_json(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(SAMPLES)]) == 0
    capsys.readouterr()
    assert main(["ledger", "head"]) == 0
    note = capsys.readouterr().out
    data = _json(capsys, "ledger", "head", "--json")
    assert data["checkpoint"] == note and data["entries"] == data["checkpoint_size"] == 9
    assert note.startswith(data["origin"] + "\n") and data["key"].startswith(data["origin"])
    assert data["signed_at"][:2] == "20"
