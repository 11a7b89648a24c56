"""Inclusion proofs an auditor checks without the store, and consistency proofs."""

from __future__ import annotations

import base64
import copy
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import ConfigError, IntegrityError, NotFoundError
from imixs_archive.ledger.keys import key_path, load_signer
from imixs_archive.ledger.proofs import check_inclusion, consistency, inclusion
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.tlog.merkle import verify_consistency
from imixs_archive.tlog.note import Checkpoint, generate_signer, open_note
from support.snapshots import ORIGIN, make_snapshot


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "keys")})


def _sid(step: int) -> str:
    return str(make_snapshot(step).get_first("$uniqueid"))


@pytest.fixture
def sequencer(archive: Archive, settings: Settings) -> Sequencer:
    for step in range(11):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as opened:
        opened.drain(checkpoint=True)
        return opened


def test_an_inclusion_proof_holds_offline_for_every_snapshot(
    archive: Archive, sequencer: Sequencer, settings: Settings
) -> None:
    signer = load_signer(key_path(settings))
    assert signer is not None
    for step in range(11):
        proof = inclusion(archive, sequencer, _sid(step))
        checked = check_inclusion(proof, [signer.verifier()])
        assert (checked.entry.kind, checked.entry.target) == ("stored", _sid(step))
        assert checked.checkpoint.size == 11


def _fails(proof: dict[str, Any], settings: Settings, match: str) -> None:
    signer = load_signer(key_path(settings))
    assert signer is not None
    with pytest.raises(IntegrityError, match=match):
        check_inclusion(proof, [signer.verifier()])


def test_a_changed_proof_does_not_hold(
    archive: Archive, sequencer: Sequencer, settings: Settings
) -> None:
    proof = inclusion(archive, sequencer, _sid(4))
    forged = copy.deepcopy(proof)
    forged["entry"] = forged["entry"].replace('"kind":"stored"', '"kind":"found"')
    _fails(forged, settings, "not in the signed log")
    # another place in the log (entries made in one millisecond are in no set order)
    moved = {**proof, "index": (proof["index"] + 1) % proof["tree_size"]}
    _fails(moved, settings, "not in the signed log")
    path = copy.deepcopy(proof)
    first = bytearray(base64.b64decode(path["proof"][0]))
    first[0] ^= 1
    path["proof"][0] = base64.b64encode(bytes(first)).decode()
    _fails(path, settings, "not in the signed log")
    short = {**proof, "proof": proof["proof"][:-1]}
    _fails(short, settings, "not in the signed log")
    _fails({**proof, "tree_size": 12}, settings, "its checkpoint signs 11")
    _fails({"format": "something else"}, settings, "not an inclusion proof")
    _fails({**proof, "proof": ["not base64!"]}, settings, "not a readable inclusion proof")
    _fails({**proof, "snapshot": _sid(3)}, settings, f"names snapshot {_sid(3)}")


def test_a_proof_signed_by_another_key_does_not_hold(
    archive: Archive, sequencer: Sequencer
) -> None:
    proof = inclusion(archive, sequencer, _sid(2))
    stranger = generate_signer("imixs-archive/elsewhere")
    with pytest.raises(IntegrityError, match="no signature by a known key"):
        check_inclusion(proof, [stranger.verifier()])


def test_a_proof_of_a_snapshot_not_logged_is_refused(
    archive: Archive, sequencer: Sequencer
) -> None:
    with pytest.raises(NotFoundError, match="no entry about snapshot"):
        inclusion(archive, sequencer, _sid(99))


def test_a_proof_waits_for_a_checkpoint_where_no_key_signs(
    archive: Archive, sequencer: Sequencer, tmp_path: Path
) -> None:
    archive.store(make_snapshot(40))
    keyless = Sequencer(archive, load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "no")}))
    with pytest.raises(
        ConfigError, match=r"no signed checkpoint covers ledger entry 11.*no ledger key"
    ):
        inclusion(archive, keyless, _sid(40))
    keyless.release()


def test_a_consistency_proof_links_every_older_checkpoint(
    archive: Archive, sequencer: Sequencer, settings: Settings
) -> None:
    signer = load_signer(key_path(settings))
    assert signer is not None
    roots = {}
    for step in range(11, 17):
        head = sequencer.tree()
        assert head is not None
        roots[head.size] = head.root
        archive.store(make_snapshot(step))
        sequencer.drain(checkpoint=True)
    for old, old_root in roots.items():
        proof = consistency(archive, sequencer, old)
        opened = open_note(proof["checkpoint"], [signer.verifier()])
        checkpoint = Checkpoint.parse(opened.text)
        hashes = [base64.b64decode(item) for item in proof["proof"]]
        verify_consistency(old, checkpoint.size, old_root, checkpoint.root_hash, hashes)
    with pytest.raises(NotFoundError):
        consistency(archive, sequencer, 99)


def test_the_proof_of_a_legal_hold_holds_offline(
    archive: Archive, sequencer: Sequencer, settings: Settings
) -> None:
    """A hold's subject is ``hold:`` and the instance (and case): its proof names that
    subject, and the check compares it with the subject of the entry, not the instance."""
    signer = load_signer(key_path(settings))
    assert signer is not None
    instance = ORIGIN
    archive.holds.place(instance, "audit 2026", "mia", dt.datetime.now(dt.UTC))
    sequencer.drain(checkpoint=True)
    subject = f"hold:{instance} / audit 2026"
    proof = inclusion(archive, sequencer, subject)
    checked = check_inclusion(proof, [signer.verifier()])
    assert (checked.entry.kind, checked.entry.subject) == ("hold-placed", subject)
    _fails({**proof, "snapshot": f"hold:{instance}"}, settings, "its entry is about hold:")
    with pytest.raises(NotFoundError, match=f"its holds now: hold:{instance} / audit 2026"):
        inclusion(archive, sequencer, f"hold:{instance}")  # the case left out
