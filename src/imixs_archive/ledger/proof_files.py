"""Proof files an auditor keeps and checks offline, in the C2SP text formats.

An inclusion proof is a ``c2sp.org/tlog-proof@v1`` file (https://c2sp.org/tlog-proof):

    c2sp.org/tlog-proof@v1
    extra <base64 of the entry's bytes>
    index <the entry's number>
    <base64 audit path hash, one a line, the leaf's sibling first>
    ...
    <blank line>
    <the checkpoint, verbatim>

``extra`` carries the entry (its canonical JSON, whose SHA-256 after a 0 byte is its leaf
hash); a proof without it is checked against the entry given apart (``--entry``).

A consistency proof is the body of a C2SP tlog-witness ``add-checkpoint`` request
(https://c2sp.org/tlog-witness): ``old <size>``, the RFC 6962 consistency proof's hashes
one a line, a blank line, then the newer checkpoint. :func:`check_consistency` checks it
against the older checkpoint: the log that one signed is the beginning of this one.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass

from imixs_archive.errors import IntegrityError
from imixs_archive.ledger.checkpoints import open_checkpoint
from imixs_archive.ledger.entries import Entry
from imixs_archive.tlog.merkle import (
    HASH_SIZE,
    ProofError,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from imixs_archive.tlog.note import Checkpoint, Verifier

TLOG_PROOF = "c2sp.org/tlog-proof@v1"
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]{0,19})\Z")
"""A number as the spec writes it: ASCII digits, no leading 0, at most 20 (a uint64)."""
MAX_HASHES = 63


@dataclass(frozen=True)
class CheckedProof:
    entry: Entry
    index: int
    checkpoint: Checkpoint


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def tlog_proof(entry: str, index: int, path: Sequence[bytes], note: str) -> str:
    """The tlog-proof file of entry ``index`` (its text) in the checkpoint ``note``."""
    lines = [TLOG_PROOF, f"extra {_b64(entry.encode('utf-8'))}", f"index {index}"]
    return "\n".join([*lines, *map(_b64, path), "", note])


def consistency_file(old_size: int, path: Sequence[bytes], note: str) -> str:
    """The consistency proof from ``old_size`` to the checkpoint ``note`` (a tlog-witness
    add-checkpoint body)."""
    return "\n".join([f"old {old_size}", *map(_b64, path), "", note])


def _number(text: str, what: str) -> int:
    if not _DECIMAL.match(text):
        raise IntegrityError(f"{what} {text!r} is not a number")
    return int(text)


def _hashes(lines: Sequence[str], what: str) -> list[bytes]:
    if len(lines) > MAX_HASHES:
        raise IntegrityError(f"{what}: {len(lines)} hashes, more than a proof has")
    found = []
    for line in lines:
        try:
            digest = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            digest = b""
        if len(digest) != HASH_SIZE or _b64(digest) != line:
            raise IntegrityError(f"{what}: {line!r} is not a base64 SHA-256 hash")
        found.append(digest)
    return found


def _split(text: str, what: str) -> tuple[list[str], str]:
    """The lines before the blank line, and the checkpoint after it."""
    head, blank, note = text.partition("\n\n")
    if not blank:
        raise IntegrityError(f"{what}: no blank line before the checkpoint")
    return head.split("\n"), note


def check_tlog_proof(
    text: str, keys: Sequence[Verifier], entry: bytes | None = None
) -> CheckedProof:
    """Check a tlog-proof file (with the entry given apart, or the one in its ``extra``);
    IntegrityError saying why it does not hold."""
    what = "not a readable tlog-proof"
    lines, note = _split(text, what)
    if lines[0] != TLOG_PROOF:
        raise IntegrityError(f"{what}: it does not begin with {TLOG_PROOF}")
    rest = lines[1:]
    if rest and rest[0].startswith("extra "):
        extra = _extra(rest.pop(0).removeprefix("extra "), what)
        entry = extra if entry is None else entry
    if not rest or not rest[0].startswith("index "):
        raise IntegrityError(f"{what}: no index line")
    index = _number(rest.pop(0).removeprefix("index "), "the index")
    path = _hashes(rest, what)
    if entry is None:
        raise IntegrityError("the proof carries no entry (extra): give it with --entry")
    checkpoint = open_checkpoint(note, keys, "the proof's checkpoint")
    try:
        verify_inclusion(leaf_hash(entry), index, checkpoint.size, path, checkpoint.root_hash)
    except ProofError as exc:
        raise IntegrityError(f"the entry is not in the signed log: {exc}") from None
    try:
        logged = Entry.decode(entry.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise IntegrityError(
            f"the entry proved is no entry of this archive's ledger: {exc}"
        ) from None
    return CheckedProof(logged, index, checkpoint)


def _extra(text: str, what: str) -> bytes:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise IntegrityError(f"{what}: its extra is not base64") from None
    return data


def check_consistency(
    old_note: str, text: str, keys: Sequence[Verifier]
) -> tuple[Checkpoint, Checkpoint]:
    """Check a consistency proof file against an older checkpoint: both signed by a given
    key, of one log, the older's log the beginning of the newer's. (older, newer)."""
    old = open_checkpoint(old_note, keys, "the older checkpoint")
    what = "not a readable consistency proof"
    lines, note = _split(text, what)
    if not lines[0].startswith("old "):
        raise IntegrityError(f"{what}: it does not begin with 'old <size>'")
    size = _number(lines[0].removeprefix("old "), "the old size")
    path = _hashes(lines[1:], what)
    new = open_checkpoint(note, keys, "the proof's checkpoint")
    if new.origin != old.origin:
        raise IntegrityError(f"the checkpoints are of two logs: {old.origin!r}, {new.origin!r}")
    if size != old.size:
        raise IntegrityError(
            f"the proof is from a log of {size} entries, the older checkpoint signs {old.size}"
        )
    try:
        verify_consistency(old.size, new.size, old.root_hash, new.root_hash, path)
    except ProofError as exc:
        raise IntegrityError(
            f"the log of {old.size} entries is not the beginning of the log of {new.size}: {exc}"
        ) from None
    return old, new
