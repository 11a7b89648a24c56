"""``imixs-archive ledger``: head, checkpoint, verify, proof, check-proof, init, key, as a
user runs them: exit codes and what they print."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from imixs_archive.archive.snapshot_xml import seal, snapshot_xml
from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import ledger_commands, main
from imixs_archive.ledger.new_log import NEW_LOGS
from imixs_archive.ledger.tree import read_tree
from imixs_archive.storage.model import ARCHIVE_LEDGER_QUEUE, SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.tlog.note import Checkpoint, generate_signer
from support.snapshots import make_snapshot, store_steps


def _sid(step: int) -> str:
    return str(make_snapshot(step).get_first("$uniqueid"))


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store of four snapshots; the ledger's key beside it."""
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(tmp_path / "store"))
    with SQLiteBackend(tmp_path / "store") as backend, Archive(backend) as archive:
        for step in range(4):
            archive.store(make_snapshot(step))
    return tmp_path / "store"


def test_checkpoint_head_and_key(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", "head"]) == 0  # the queue is logged and signed first
    head = capsys.readouterr().out
    lines = head.splitlines()
    assert lines[1] == "4" and lines[3] == "" and lines[4].startswith("— imixs-archive.invalid/")
    assert re.fullmatch(r"imixs-archive\.invalid/[A-Za-z0-9.-]+/[0-9a-f]{8}", lines[0])
    assert main(["ledger", "key"]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith(lines[0] + "+") and (store / "ledger.key").exists()
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        archive.store(make_snapshot(9))
    assert main(["ledger", "checkpoint"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "5"


def test_verify_says_everything_holds_then_names_what_was_altered(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "verify"]) == 0
    out = capsys.readouterr().out
    assert "checked 4 ledger entries and 4 snapshots: everything holds" in out
    with SQLiteBackend(store) as backend:
        row = backend.get(SNAPSHOTS, {"snapshot": _sid(2)})
        assert row is not None
        forged = snapshot_xml(backend, row).replace(b">snapshot-workitem<", b">forged<")
        backend.put(SNAPSHOTS, [{"snapshot": _sid(2), "data": seal(forged)}])
        backend.delete(SNAPSHOTS, {"snapshot": _sid(3)})
    assert main(["ledger", "verify", "--restart"]) == 5
    out = capsys.readouterr().out
    assert f"altered: {_sid(2)}" in out
    assert f"removed without a logged deletion: {_sid(3)}" in out
    assert "PROBLEMS FOUND" in out
    assert main(["ledger", "verify", "--json"]) == 5
    found = json.loads(capsys.readouterr().out)
    assert found["ok"] is False and found["altered"] == [_sid(2)]


def test_verify_since_a_checkpoint_and_with_a_key(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "head"]) == 0
    kept = tmp_path / "checkpoint.txt"
    kept.write_text(capsys.readouterr().out)
    assert main(["ledger", "key"]) == 0
    key = capsys.readouterr().out.strip()
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        archive.store(make_snapshot(7))
    assert main(["ledger", "verify", "--since", str(kept), "--key", key]) == 0
    out = capsys.readouterr().out
    assert "checked against the checkpoint given (--since): 4 entries" in out
    os.unlink(store / "ledger.key")  # another host: only the key given is trusted
    stranger = "imixs-archive/x+00000000+" + "A" * 44
    assert main(["ledger", "verify", "--key", stranger]) == 2  # a configuration error
    assert "public key" in capsys.readouterr().err
    other = generate_signer("imixs-archive/elsewhere").vkey()
    assert main(["ledger", "verify", "--key", other]) == 5
    assert "(signed by another key, or changed)" in capsys.readouterr().out


def _key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["ledger", "key"]) == 0
    key = tmp_path / "ledger.pub"
    key.write_text(capsys.readouterr().out)
    return key


def test_proof_and_check_proof_the_auditors_way(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "proof", _sid(1)]) == 0
    proof = tmp_path / "entry.tlog-proof"
    proof.write_text(capsys.readouterr().out)
    lines = proof.read_text().splitlines()
    assert lines[0] == "c2sp.org/tlog-proof@v1" and lines[1].startswith("extra ")
    assert lines[2].startswith("index ") and "" in lines  # the checkpoint after a blank line
    key = _key(tmp_path, capsys)
    # the auditor's side: no store at all
    assert main(["ledger", "check-proof", str(proof), "--key", str(key)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("holds: entry ") and f"stored {_sid(1)} sha256:" in out
    entry = base64.b64decode(lines[1].removeprefix("extra "))
    other = entry.replace(_sid(1).encode(), _sid(2).encode())
    tampered = proof.read_text().replace(lines[1], f"extra {base64.b64encode(other).decode()}")
    proof.write_text(tampered)
    assert main(["ledger", "check-proof", str(proof), "--key", str(key)]) == 5
    assert "the entry is not in the signed log" in capsys.readouterr().err
    # without its extra, the entry is given apart (as its line of `ledger entries`)
    bare = tmp_path / "bare.tlog-proof"
    bare.write_text(
        "\n".join(line for line in tampered.split("\n") if not line.startswith("extra "))
    )
    assert main(["ledger", "check-proof", str(bare), "--key", str(key)]) == 5
    assert "give it with --entry" in capsys.readouterr().err
    index = int(lines[2].removeprefix("index "))
    assert main(["ledger", "entries", str(index)]) == 0
    given = tmp_path / "entry.json"
    given.write_text(capsys.readouterr().out)
    assert given.read_bytes() == entry + b"\n"
    assert main(["ledger", "check-proof", str(bare), "--key", str(key), "--entry", str(given)]) == 0
    proof.write_text("not a proof")
    assert main(["ledger", "check-proof", str(proof), "--key", str(key)]) == 5
    assert main(["ledger", "proof", _sid(50)]) == 4


def test_a_json_proof_of_an_earlier_version_is_still_checked(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "proof", _sid(1), "--json"]) == 0
    proof = tmp_path / "proof.json"
    proof.write_text(capsys.readouterr().out)
    key = _key(tmp_path, capsys)
    assert main(["ledger", "check-proof", str(proof), "--key", str(key)]) == 0
    tampered = json.loads(proof.read_text())
    tampered["entry"] = tampered["entry"].replace(_sid(1), _sid(2))
    tampered["snapshot"] = _sid(2)  # relabelled too, so that only the tree can tell
    proof.write_text(json.dumps(tampered))
    assert main(["ledger", "check-proof", str(proof), "--key", str(key)]) == 5
    assert "the entry is not in the signed log" in capsys.readouterr().err


def test_a_legal_holds_proof_holds(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    origin = _sid(1).rsplit("-", 1)[0]
    assert main(["legal-hold", "place", origin, "--reason", "audit 2026"]) == 0
    capsys.readouterr()
    subject = f"hold:{origin} / audit 2026"
    for extra in ([], ["--json"]):
        assert main(["ledger", "proof", subject, *extra]) == 0
        proof = tmp_path / "hold-proof"
        proof.write_text(capsys.readouterr().out)
        key = _key(tmp_path, capsys)
        assert main(["ledger", "check-proof", str(proof), "--key", str(key)]) == 0
        assert f"hold-placed {subject} (audit 2026)" in capsys.readouterr().out


def test_consistency_and_check_consistency_offline(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "head"]) == 0
    old = tmp_path / "checkpoint-4"
    old.write_text(capsys.readouterr().out)
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        for step in range(4, 7):
            archive.store(make_snapshot(step))
    assert main(["ledger", "checkpoint"]) == 0
    capsys.readouterr()
    assert main(["ledger", "consistency", str(old)]) == 0
    new = tmp_path / "consistency"
    new.write_text(capsys.readouterr().out)
    assert new.read_text().startswith("old 4\n")
    key = _key(tmp_path, capsys)
    assert main(["ledger", "check-consistency", str(old), str(new), "--key", str(key)]) == 0
    assert "the log of 4 entries" in capsys.readouterr().out
    hashes = new.read_text().split("\n")
    hashes[1] = base64.b64encode(bytes(32)).decode()
    new.write_text("\n".join(hashes))
    assert main(["ledger", "check-consistency", str(old), str(new), "--key", str(key)]) == 5
    assert "is not the beginning of the log of 7" in capsys.readouterr().err
    assert main(["ledger", "consistency", "3"]) == 0
    new.write_text(capsys.readouterr().out)
    assert main(["ledger", "check-consistency", str(old), str(new), "--key", str(key)]) == 5
    assert "from a log of 3 entries, the older checkpoint signs 4" in capsys.readouterr().err
    assert main(["ledger", "consistency", "99"]) == 4


def test_entries_by_number(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["ledger", "entries", "1", "--count", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(json.loads(line)["kind"] == "stored" for line in lines)
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        assert lines == [logged.text for logged in archive.ledger.entries(1, 4)]
    assert main(["ledger", "entries", "3", "--count", "2"]) == 4  # the log holds 0 to 3
    assert "the log holds entries 0 to 3" in capsys.readouterr().err
    assert main(["ledger", "entries", "-1"]) == 2
    monkeypatch.setattr(ledger_commands, "ENTRIES_AT_ONCE", 2)
    capsys.readouterr()
    assert main(["ledger", "entries", "2", "--count", "3"]) == 4  # said before any is printed
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("typed", ["", "EOF"])
def test_init_asks_a_terminal_for_the_origin_and_takes_no_answer_as_none(
    store: Path,
    typed: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Asked on a terminal, an empty answer or Ctrl-D (end of input) gives no origin: the
    command says what it needs (exit 2), not an internal error."""

    def answer(prompt: str) -> str:
        if typed == "EOF":
            raise EOFError
        return typed

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", answer)
    assert main(["ledger", "init"]) == 2
    assert "the ledger needs an origin: give --origin" in capsys.readouterr().err
    monkeypatch.setattr("builtins.input", lambda prompt: "archive.example.com/asked")
    assert main(["ledger", "init"]) == 0
    capsys.readouterr()
    assert main(["ledger", "key"]) == 0
    assert capsys.readouterr().out.startswith("archive.example.com/asked+")


def test_init_logs_what_was_stored_before_the_ledger(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SQLiteBackend(store) as backend:
        backend.delete(
            ARCHIVE_LEDGER_QUEUE,
            {"slot": next(int(row["slot"]) for row in backend.scan(ARCHIVE_LEDGER_QUEUE))},
        )  # as if an archive without a ledger had stored them
    assert main(["ledger", "init"]) == 2  # no origin: none made up where one is asked for
    assert "the ledger needs an origin: give --origin" in capsys.readouterr().err
    assert main(["ledger", "init", "--origin", "localhost"]) == 2
    assert "is not a schema-less URL" in capsys.readouterr().err
    assert main(["ledger", "init", "--origin", "archive.example.com/invoices"]) == 0
    out = capsys.readouterr().out
    assert "4 snapshots in the store: 4 logged as found now" in out
    assert "the log holds 4 entries" in out
    assert main(["ledger", "init"]) == 0  # again: nothing left to log
    assert "0 logged as found now" in capsys.readouterr().out
    assert main(["ledger", "verify"]) == 0


def test_key_before_the_ledger_started(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    SQLiteBackend(tmp_path / "store").close()  # an archive whose ledger has not started
    assert main(["ledger", "key", "--data-dir", str(tmp_path / "store")]) == 1
    assert "no ledger key in" in capsys.readouterr().err
    assert not (tmp_path / "store" / "ledger.key").exists()


def test_init_creates_the_archive_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one ledger command that starts an archive where there is none."""
    new = str(tmp_path / "new")
    assert main(["ledger", "init", "--data-dir", new, "--origin", "archive.example.com/a"]) == 0
    assert "0 snapshots in the store" in capsys.readouterr().out
    assert main(["ledger", "key", "--data-dir", new]) == 0
    assert capsys.readouterr().out.startswith("archive.example.com/a+")
    assert (tmp_path / "new" / "archive.db").is_file()
    assert (tmp_path / "new" / "ledger.key").is_file()


def _signed(note: str) -> Checkpoint:
    return Checkpoint.parse(note.split("\n\n")[0] + "\n")


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


def test_a_store_put_back_and_grown_is_refused_until_a_new_log_is_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user's backup: the store folder copied while nothing has it open (the key and its
    record of what it signed inside it, as by default), put back after the key signed more,
    and grown again. The checkpoint folder, elsewhere, still has what was signed: the
    checkpoint is refused (exit 5, both roots named), nothing is signed, the ledger stays
    stopped, until ``ledger new-log`` starts a new origin, recorded with its reason."""
    data, copies = tmp_path / "store", tmp_path / "copies"
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(data))
    monkeypatch.setenv("ARCHIVE_LEDGER_CHECKPOINT_DIR", str(copies))
    monkeypatch.setenv("ARCHIVE_LEDGER_ORIGIN", "archive.example.com/invoices")

    def grow(steps: range) -> None:
        store_steps(data, steps)

    grow(range(3))
    assert main(["ledger", "checkpoint"]) == 0
    older = _signed(capsys.readouterr().out)
    shutil.copytree(data, tmp_path / "backup")
    grow(range(3, 5))
    assert main(["ledger", "checkpoint"]) == 0
    signed = _signed(capsys.readouterr().out)
    assert signed.size == 5
    shutil.rmtree(data)
    shutil.copytree(tmp_path / "backup", data)
    grow(range(10, 12))
    before = sorted(p.name for p in copies.rglob("*"))

    assert main(["ledger", "checkpoint"]) == 5
    err = capsys.readouterr().err
    root = _b64(signed.root_hash)
    assert f"signed 5 entries of archive.example.com/invoices with the root {root}" in err
    assert f"holds only 3 entries (root {_b64(older.root_hash)})" in err
    assert "ledger new-log --origin" in err
    assert main(["ledger", "head"]) == 5  # stopped: not served as if it were the log
    capsys.readouterr()
    assert sorted(p.name for p in copies.rglob("*")) == before  # nothing new signed
    with SQLiteBackend(data) as backend, Archive(backend) as archive:
        head = read_tree(archive.ledger)
        assert head is not None and (head.size, head.checkpoint_size) == (3, 3)

    new = "archive.example.com/invoices/restored-2026-11"
    assert main(["ledger", "new-log", "--origin", new, "--reason", "put back the backup"]) == 0
    captured = capsys.readouterr()
    first = _signed(captured.out)
    assert (first.origin, first.size) == (new, 5) and f"a new log {new}" in captured.err
    assert list(data.glob("ledger.key.*.retired")) and list(data.glob("ledger.key.signed.*"))
    assert main(["ledger", "key"]) == 0
    assert capsys.readouterr().out.startswith(new + "+")
    with SQLiteBackend(data) as backend, Archive(backend) as archive:
        [step] = json.loads(archive.ledger.head.text(NEW_LOGS) or "[]")
        assert step["reason"] == "put back the backup" and step["origin"] == new
        assert (step["previous_origin"], step["previous_size"]) == (older.origin, 3)
        assert _b64(signed.root_hash) in step["refused"]
    grow(range(20, 22))
    assert main(["ledger", "checkpoint"]) == 0
    assert _signed(capsys.readouterr().out).size == 7
    assert main(["ledger", "verify"]) == 0
    assert "everything holds" in capsys.readouterr().out
    assert main(["ledger", "new-log", "--origin", new, "--reason", "again"]) == 2
