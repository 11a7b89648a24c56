"""Proofs an auditor checks without the store: an entry is in the signed log, and an older
checkpoint's log is the beginning of today's.

Each is made as a file in a C2SP text format (``file``, ``proof_files.py``: what ``ledger
proof`` and ``ledger consistency`` print) and, for the API, as JSON. The JSON inclusion
proof (what ``ledger proof`` printed before; still checked, :func:`check_inclusion`)
carries the entry's text, its number, the checkpoint it is proved against (a signed note)
and the hashes of RFC 6962's audit path, base64.
:func:`check_inclusion` needs nothing but that file and the ledger's public key: it
opens the checkpoint with the key, hashes the entry as a leaf and folds the path up to the
checkpoint's root (RFC 9162 §2.1.3.2).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import (
    ConfigError,
    IntegrityError,
    NotFoundError,
    StoreUnavailableError,
)
from imixs_archive.ledger.checkpoints import open_checkpoint
from imixs_archive.ledger.entries import CASE_SEPARATOR, HOLD_PREFIX, Entry, hold_subject
from imixs_archive.ledger.proof_files import CheckedProof, consistency_file, tlog_proof
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tiles import TileReader
from imixs_archive.ledger.tree import TreeState
from imixs_archive.tlog.merkle import (
    ProofError,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    verify_inclusion,
)
from imixs_archive.tlog.note import Verifier

FORMAT = "imixs-archive inclusion proof 1"


def _head_with_checkpoint(sequencer: Sequencer, covering: int) -> TreeState:
    """The head, with a checkpoint that signs at least ``covering`` entries: signed now
    when the last one is older and this process holds the key."""
    head = sequencer.tree()
    if head is None or head.checkpoint_size < covering:
        sequencer.drain(checkpoint=True)
        head = sequencer.tree()
    if head is None or not head.checkpoint or head.checkpoint_size < covering:
        why = (
            f"no signed checkpoint covers ledger entry {covering - 1} yet: it is signed with "
            "the next checkpoint (imixs-archive ledger checkpoint, where the key is)"
        )
        if sequencer.key_note:  # this process cannot sign
            raise ConfigError(f"{why}; {sequencer.key_note}")
        raise StoreUnavailableError(f"{why}; another process sequences: try again shortly")
    return head


def inclusion(archive: Archive, sequencer: Sequencer, snapshot_id: str) -> dict[str, Any]:
    """The inclusion proof of the last entry about a snapshot (its store, or its deletion)
    in the latest signed checkpoint. NotFoundError when the ledger has no entry of it."""
    sequencer.drain()
    row = archive.ledger.subject(snapshot_id)
    if row is None:
        raise NotFoundError(_not_logged(archive, snapshot_id))
    head = _head_with_checkpoint(sequencer, row.idx + 1)
    logged = archive.ledger.entry(row.idx)
    if logged is None:
        raise IntegrityError(f"ledger entry {row.idx} is missing from the store")
    path = inclusion_proof(row.idx, head.checkpoint_size, TileReader(archive.ledger, head).node)
    return {
        "format": FORMAT,
        "snapshot": snapshot_id,
        "index": row.idx,
        "entry": logged.text,
        "tree_size": head.checkpoint_size,
        "proof": [base64.b64encode(item).decode("ascii") for item in path],
        "checkpoint": head.checkpoint,
        "file": tlog_proof(logged.text, row.idx, path, head.checkpoint),
    }


def _not_logged(archive: Archive, subject: str) -> str:
    """Why there is no proof of a subject; for ``hold:<instance>``, the subjects of the
    instance's holds (each case is one: ``hold:<instance> / <case>``)."""
    if not subject.startswith(HOLD_PREFIX):
        return f"the ledger has no entry about snapshot {subject}"
    instance = subject.removeprefix(HOLD_PREFIX).partition(CASE_SEPARATOR)[0]
    cases = [hold_subject(instance, hold.reason) for hold in archive.holds.of(instance)]
    named = f" (its holds now: {'; '.join(cases)})" if cases else ""
    return (
        f"the ledger has no entry about {subject}: a legal hold's entries are about "
        f"hold:<instance> / <case>{named}"
    )


def consistency(archive: Archive, sequencer: Sequencer, old_size: int) -> dict[str, Any]:
    """The proof that the log of ``old_size`` entries is the beginning of the log the
    latest checkpoint signs."""
    head = _head_with_checkpoint(sequencer, 0)
    if not 0 <= old_size <= head.checkpoint_size:
        raise NotFoundError(
            f"the latest checkpoint signs {head.checkpoint_size} entries: no proof from {old_size}"
        )
    path = consistency_proof(old_size, head.checkpoint_size, TileReader(archive.ledger, head).node)
    return {
        "old_size": old_size,
        "tree_size": head.checkpoint_size,
        "proof": [base64.b64encode(item).decode("ascii") for item in path],
        "checkpoint": head.checkpoint,
        "file": consistency_file(old_size, path, head.checkpoint),
    }


def check_inclusion(proof: Any, keys: Sequence[Verifier]) -> CheckedProof:
    """Check an inclusion proof offline (the auditor's tool); IntegrityError saying why it
    does not hold."""
    try:
        if proof.get("format") != FORMAT:
            raise IntegrityError(f"not an inclusion proof of this archive ({FORMAT!r})")
        text, index, size = str(proof["entry"]), int(proof["index"]), int(proof["tree_size"])
        named = str(proof["snapshot"])
        path = [base64.b64decode(item, validate=True) for item in proof["proof"]]
        note = str(proof["checkpoint"])
    except (AttributeError, KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise IntegrityError(f"not a readable inclusion proof: {exc}") from None
    checkpoint = open_checkpoint(note, keys, "the proof's checkpoint")
    if checkpoint.size != size:
        raise IntegrityError(
            f"the proof is for a log of {size} entries, its checkpoint signs {checkpoint.size}"
        )
    try:
        entry = Entry.decode(text)
    except ValueError as exc:
        raise IntegrityError(f"the proof's entry: {exc}") from None
    if entry.subject != named:
        raise IntegrityError(
            f"the proof names snapshot {named}, its entry is about {entry.subject}"
        )
    try:
        verify_inclusion(leaf_hash(text.encode("utf-8")), index, size, path, checkpoint.root_hash)
    except ProofError as exc:
        raise IntegrityError(f"the entry is not in the signed log: {exc}") from None
    return CheckedProof(entry, index, checkpoint)
