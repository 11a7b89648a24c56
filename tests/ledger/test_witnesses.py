"""Witnesses: each new checkpoint goes to a real C2SP tlog-witness (litewitness, which we
did not write: ``tests/support/witness.py``) with its consistency proof; its cosignature
is kept with the checkpoint, ``ledger verify`` and ``check-proof`` require k of n, and a
witness refuses a fork the signer's own record could not see."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.ledger.forks import refused, signed_path
from imixs_archive.ledger.keys import create_signer, key_path, load_signer
from imixs_archive.ledger.proofs import inclusion
from imixs_archive.ledger.sequencer import RoundReport, Sequencer
from imixs_archive.ledger.tree import TreeState, read_tree
from imixs_archive.ledger.verify import verify_ledger
from imixs_archive.ledger.witnesses import parse_witnesses
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.tlog.cosignature import CosignatureVerifier, cosigned_by
from support.snapshots import make_snapshot, store_steps
from support.witness import RunningWitness, needs_witness, running_witness

ORIGIN = "archive.example.com/witnessed"
OTHER = "0000cafe-0000-4000-8000-00000000c0de"
"""A process instance of the put-back store's own."""


def test_witness_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="is not 'URL VKEY'"):
        parse_witnesses("w1.example/w+01020304+AQ==")
    log_key = "ledger.example+01020304+AQID"  # a log's key (type 0x01) is not a witness's
    with pytest.raises(ConfigError, match="not a cosignature/v1 Ed25519 key"):
        parse_witnesses(f"https://w.example {log_key}")
    [witness] = parse_witnesses(f"https://w.example/ {_another_witness_key()}")
    assert (witness.url, witness.key.name) == ("https://w.example", "witness.example.net/other")


@pytest.fixture
def witness(tmp_path: Path) -> Iterator[RunningWitness]:
    with running_witness(tmp_path / "w1", "witness.example.org/w1") as running:
        yield running


def _settings(tmp_path: Path, witness: RunningWitness, **more: str) -> Settings:
    settings = load_settings(
        {
            "ARCHIVE_DATA_DIR": str(tmp_path / "keys"),
            "ARCHIVE_LEDGER_ORIGIN": ORIGIN,
            "ARCHIVE_LEDGER_WITNESSES": witness.setting(),
            **more,
        }
    )
    signer = create_signer(key_path(settings), ORIGIN)
    witness.add_log(ORIGIN, signer.vkey())
    return settings


@needs_witness
def test_checkpoints_carry_the_cosignature_of_a_real_witness(
    archive: Archive, tmp_path: Path, witness: RunningWitness
) -> None:
    settings = _settings(tmp_path, witness)
    key = CosignatureVerifier.from_vkey(witness.vkey)
    for step in range(3):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        assert sequencer.drain(checkpoint=True).notes == []
    head = read_tree(archive.ledger)
    assert head is not None and head.checkpoint_size == 3
    assert list(cosigned_by(head.checkpoint, [key])) == [witness.name]
    assert witness.size_of(ORIGIN) == 3
    for step in range(3, 5):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:  # a new process: learns the size (409)
        assert sequencer.drain(checkpoint=True).notes == []
    head = read_tree(archive.ledger)
    assert head is not None and head.checkpoint_size == 5
    assert witness.size_of(ORIGIN) == 5  # it checked the proof from 3 to 5 itself
    assert list(cosigned_by(head.checkpoint, [key])) == [witness.name]
    year = [note for size, note, _at in archive.ledger.checkpoints(_year(head)) if size == 5]
    assert year == [head.checkpoint]  # the checkpoints table keeps the cosigned note
    report = verify_ledger(archive, settings, witnesses=[key], quorum=1)
    assert report.ok, report.problems
    assert f"the ledger's last checkpoint: cosigned by 1 of 1 witnesses ({witness.name})" in (
        report.checkpoints
    )
    other = CosignatureVerifier.from_vkey(_another_witness_key())
    report = verify_ledger(archive, settings, witnesses=[key, other], quorum=2)
    assert not report.ok
    assert any("cosigned by 1 of the 2 witnesses" in p for p in report.problems)


def _year(head: object) -> int:
    from imixs_archive.timezones import from_epoch_ms

    return from_epoch_ms(head.checkpoint_at).year  # type: ignore[attr-defined]


def _another_witness_key() -> str:
    import base64
    import hashlib

    public = bytes(range(32))
    name = "witness.example.net/other"
    key_id = hashlib.sha256(name.encode() + b"\n\x04" + public).digest()[:4].hex()
    return f"{name}+{key_id}+" + base64.b64encode(b"\x04" + public).decode()


@needs_witness
def test_a_witness_refuses_a_fork_and_the_ledger_stops(
    tmp_path: Path,
    witness: RunningWitness,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The key and its record live in the store folder (the default), so putting back the
    folder's older copy puts back the record too: the signer cannot see the fork, and
    signs. The witness, which cosigned more, refuses it (its own consistency check): the
    command exits 5 naming the witness, the ledger stops, the witness keeps its size, and
    an auditor who requires the witness's cosignature rejects the forked checkpoint's
    proofs, while the good one's pass."""
    data = tmp_path / "store"
    settings = _settings(tmp_path, witness)
    (data).mkdir()
    shutil.move(str(key_path(settings)), data / "ledger.key")  # the default place
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(data))
    monkeypatch.setenv("ARCHIVE_LEDGER_ORIGIN", ORIGIN)
    monkeypatch.setenv("ARCHIVE_LEDGER_WITNESSES", witness.setting())

    def grow(steps: range) -> None:
        store_steps(data, steps)

    grow(range(3))
    assert main(["ledger", "checkpoint"]) == 0
    capsys.readouterr()
    shutil.copytree(data, tmp_path / "backup")
    grow(range(3, 5))
    assert main(["ledger", "checkpoint"]) == 0
    capsys.readouterr()
    assert main(["ledger", "proof", str(make_snapshot(4).get_first("$uniqueid"))]) == 0
    good = tmp_path / "good.json"
    good.write_text(capsys.readouterr().out)
    assert witness.size_of(ORIGIN) == 5

    shutil.rmtree(data)
    shutil.copytree(tmp_path / "backup", data)
    grow(range(10, 14))
    assert main(["ledger", "checkpoint"]) == 5
    err = capsys.readouterr().err
    assert f"witness {witness.name} refuses the checkpoint of 7 entries of {ORIGIN}" in err
    assert "HTTP 422" in err and "ledger new-log" in err
    assert witness.size_of(ORIGIN) == 5
    with SQLiteBackend(data) as backend, Archive(backend) as archive:
        assert "refuses the checkpoint of 7 entries" in refused(archive.ledger)
    assert main(["ledger", "checkpoint"]) == 5  # stopped
    capsys.readouterr()

    assert main(["ledger", "key"]) == 0
    log_key = tmp_path / "ledger.pub"
    log_key.write_text(capsys.readouterr().out)
    wkey = tmp_path / "witness.pub"
    wkey.write_text(witness.vkey + "\n")
    args = ["--key", str(log_key), "--witness", str(wkey)]
    assert main(["ledger", "check-proof", str(good), *args]) == 0
    assert f"cosigned by 1 of 1 witnesses ({witness.name})" in capsys.readouterr().out
    assert main(["ledger", "proof", str(make_snapshot(12).get_first("$uniqueid"))]) == 5
    assert "Signing it would fork the log" not in capsys.readouterr().err  # the witness's why
    other = tmp_path / "other.pub"
    other.write_text(_another_witness_key())
    two = [*args, "--witness", str(other)]
    assert main(["ledger", "check-proof", str(good), *two]) == 5  # 2 of 2 by default
    assert "cosigned by 1 of the 2 witnesses" in capsys.readouterr().err
    assert main(["ledger", "check-proof", str(good), *two, "--quorum", "1"]) == 0
    capsys.readouterr()
    with SQLiteBackend(data) as backend, Archive(backend) as archive:
        head = read_tree(archive.ledger)
        assert head is not None and head.checkpoint_size == 7  # signed: the record was put back
        assert cosigned_by(head.checkpoint, [CosignatureVerifier.from_vkey(witness.vkey)]) == {}
    assert main(["ledger", "verify", "--witness", str(wkey)]) == 5
    out = capsys.readouterr().out
    assert "cosigned by 0 of the 1 witnesses (none); 1 required" in out
    assert f"witness {witness.name} refuses" in out


@needs_witness
def test_a_checkpoint_sent_after_a_newer_one_is_no_fork(
    archive: Archive, tmp_path: Path, witness: RunningWitness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round that ended after its lease ran out (a stall) sends its checkpoint to the
    witness after the round of the process that took over sent a newer one of the same log:
    the witness, ahead, has nothing to cosign it from. No fork: the ledger goes on, its head
    keeps the newer checkpoint's cosignature."""
    settings = _settings(tmp_path, witness)
    key = CosignatureVerifier.from_vkey(witness.vkey)
    for step in range(3):
        archive.store(make_snapshot(step))
    late, taker = Sequencer(archive, settings), Sequencer(archive, settings)
    send_late = late._witness

    def newer_round_first(state: TreeState, report: RoundReport) -> None:
        for step in range(3, 5):
            archive.store(make_snapshot(step))
        monkeypatch.setattr(taker, "_take_lease", lambda: "")  # late's ran out
        assert taker.run(checkpoint=True).notes == []
        assert witness.size_of(ORIGIN) == 5
        send_late(state, report)

    monkeypatch.setattr(late, "_witness", newer_round_first)
    report = late.run(checkpoint=True)
    assert report.checkpoint == 3 and report.notes == []
    assert refused(archive.ledger) == ""
    head = read_tree(archive.ledger)
    assert head is not None and head.checkpoint_size == 5
    assert list(cosigned_by(head.checkpoint, [key])) == [witness.name]


@needs_witness
def test_a_witness_ahead_of_the_whole_log_is_a_fork(
    archive: Archive, tmp_path: Path, witness: RunningWitness
) -> None:
    """The witness cosigned more entries than the store's log holds (an older copy of the
    store and of the key's record put back): the checkpoint is refused, the ledger stops."""
    settings = _settings(tmp_path, witness)
    for step in range(5):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        assert sequencer.drain(checkpoint=True).notes == []
    assert witness.size_of(ORIGIN) == 5
    signed_path(key_path(settings)).unlink()  # put back with the store
    with SQLiteBackend(tmp_path / "older") as backend, Archive(backend) as older:
        for step in range(4):
            older.store(make_snapshot(step, origin=OTHER))
        with Sequencer(older, settings) as sequencer:
            report = sequencer.run(checkpoint=True)
        why = refused(older.ledger)
    expected = (
        f"witness {witness.name} cosigned 5 entries of {ORIGIN}, more than this checkpoint's "
        "4 and the store's log: the log was put back or cut (a fork)"
    )
    assert expected in why and expected in " ".join(report.notes)
    assert witness.size_of(ORIGIN) == 5


def _doc_blocks() -> tuple[str, str]:
    """The shell and Python blocks of docs/ledger.md's auditor's check."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "ledger.md").read_text()
    section = text.split("## The auditor's check with standard tools", 1)[1].split("\n## ")[0]
    [shell] = re.findall(r"```sh\n(.*?)```", section, re.S)
    [python] = re.findall(r"```python\n(.*?)```", section, re.S)
    return shell, python


@needs_witness
def test_the_auditors_check_in_the_docs_holds_and_catches_a_change(
    archive: Archive, tmp_path: Path, witness: RunningWitness
) -> None:
    """docs/ledger.md's check with OpenSSL, a shell and Python, run as written on a real
    checkpoint cosigned by the real witness and a real proof: it passes; a changed
    checkpoint or a forged cosignature fails it."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed for the auditor's check (Debian: apt-get install openssl)")
    settings = _settings(tmp_path, witness)
    for step in range(5):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
        proof = inclusion(archive, sequencer, str(make_snapshot(3).get_first("$uniqueid")))
    audit = tmp_path / "audit"
    audit.mkdir()
    (audit / "checkpoint.txt").write_text(proof["checkpoint"])
    (audit / "ledger.pub").write_text(load_signer(key_path(settings)).vkey() + "\n")  # type: ignore[union-attr]
    (audit / "witness.pub").write_text(witness.vkey + "\n")
    (audit / "proof.json").write_text(json.dumps(proof))
    shell, python = _doc_blocks()
    (audit / "check.sh").write_text(shell)
    (audit / "fold.py").write_text(python)

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-eu", "check.sh"], cwd=audit, capture_output=True, text=True, check=False
        )

    done = check()
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Signature Verified Successfully") == 2
    folded = subprocess.run(
        [sys.executable, "fold.py", "proof.json"], cwd=audit, capture_output=True, text=True
    )
    root = proof["checkpoint"].split("\n")[2]
    assert folded.stdout.strip() == root
    changed = proof["checkpoint"].replace("\n5\n", "\n4\n", 1)
    (audit / "checkpoint.txt").write_text(changed)
    assert check().returncode != 0
    lines = proof["checkpoint"].rstrip("\n").split("\n")
    blob = bytearray(base64.b64decode(lines[-1].split(" ")[2]))
    blob[5] ^= 1  # the cosignature's time
    lines[-1] = " ".join([*lines[-1].split(" ")[:2], base64.b64encode(blob).decode()])
    (audit / "checkpoint.txt").write_text("\n".join(lines) + "\n")
    forged = check()
    assert forged.returncode != 0 and forged.stdout.count("Verified Successfully") == 1
    proof["index"] = 2 if proof["index"] != 2 else 1  # another leaf than the one proven
    (audit / "proof.json").write_text(json.dumps(proof))
    refolded = subprocess.run(
        [sys.executable, "fold.py", "proof.json"], cwd=audit, capture_output=True, text=True
    )
    assert refolded.stdout.strip() != root
