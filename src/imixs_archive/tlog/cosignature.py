"""C2SP tlog-cosignature (Ed25519, cosignature/v1): a witness's signature on a checkpoint.

A cosignature is a signed-note signature line by the witness's key: ``— <name>
base64(key ID || timestamp || signature)``, where the key ID is the first four bytes of
SHA-256(name, a newline, the type byte 0x04, the 32-byte Ed25519 public key), the
timestamp is a big-endian unsigned 64-bit count of seconds since the epoch (below 2^63),
and the Ed25519 signature is over ``cosignature/v1``, a newline, ``time <timestamp>``, a
newline, then the checkpoint's whole note text (its final newline included). The witness's
public key travels as a vkey of type 0x04: ``<name>+<8 hex key ID>+<base64(0x04 || key)>``.

A note's lines by keys not given are passed over (a checkpoint carries the log's signature
and others' cosignatures); a line by a given key must verify.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from imixs_archive.tlog.note import NoteError

ALG_COSIGNATURE_V1 = 0x04
_LINE = re.compile(r"— (\S+) ([A-Za-z0-9+/=]+)\Z")


def _key_id(name: str, public_key: bytes) -> int:
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([ALG_COSIGNATURE_V1]) + public_key)
    return int.from_bytes(digest.digest()[:4], "big")


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise NoteError(f"{what} is not base64: {text!r}") from None


@dataclass(frozen=True)
class CosignatureVerifier:
    """A witness's Ed25519 cosigning key with its name."""

    name: str
    key_id: int
    public_key: bytes

    @classmethod
    def from_vkey(cls, vkey: str) -> CosignatureVerifier:
        """Parse a witness's vkey (type 0x04); NoteError when it is not one."""
        parts = vkey.strip().split("+", 2)
        if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{8}", parts[1]) or not parts[0]:
            raise NoteError(f"witness key {vkey!r} is not <name>+<8 hex>+<base64 key>")
        name, key_id, data = parts[0], int(parts[1], 16), _b64(parts[2], "witness key")
        if len(data) != 33 or data[0] != ALG_COSIGNATURE_V1:
            raise NoteError(
                f"witness key {vkey!r} is not a cosignature/v1 Ed25519 key (type 0x04, 32 bytes)"
            )
        if any(c.isspace() for c in name) or _key_id(name, data[1:]) != key_id:
            raise NoteError(f"witness key {vkey!r}: its key ID does not match its name and key")
        return cls(name, key_id, data[1:])

    def vkey(self) -> str:
        data = base64.b64encode(bytes([ALG_COSIGNATURE_V1]) + self.public_key).decode("ascii")
        return f"{self.name}+{self.key_id:08x}+{data}"

    def timestamp(self, text: str, blob: bytes) -> int | None:
        """The time of the cosignature ``blob`` (key ID, timestamp, signature) of the note
        text ``text`` when it is this key's and verifies; None when it is another key's.
        NoteError when it is this key's and does not verify."""
        if len(blob) < 4 or int.from_bytes(blob[:4], "big") != self.key_id:
            return None
        if len(blob) != 4 + 8 + 64:
            raise NoteError(f"cosignature by {self.name} has {len(blob)} bytes, not 76")
        when = int.from_bytes(blob[4:12], "big")
        if when >= 1 << 63:
            raise NoteError(f"cosignature by {self.name}: its time is out of range")
        message = f"cosignature/v1\ntime {when}\n{text}".encode()
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(blob[12:], message)
        except InvalidSignature:
            raise NoteError(f"cosignature by {self.name} does not verify") from None
        return when


def split_note(note: str) -> tuple[str, list[str]]:
    """A signed note's text (final newline included) and its signature lines."""
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise NoteError("not a signed note (no blank line before the signatures)")
    return note[: split + 1], note[split + 2 : -1].split("\n")


def cosigned_by(note: str, witnesses: Sequence[CosignatureVerifier]) -> dict[str, int]:
    """The names of the given witnesses whose cosignature of ``note`` verifies, each with
    its time (seconds since the epoch). NoteError when a line by a given key fails."""
    text, lines = split_note(note)
    found: dict[str, int] = {}
    for line in lines:
        match = _LINE.fullmatch(line)
        if match is None:
            raise NoteError(f"signature line {line!r} is malformed")
        for witness in witnesses:
            if witness.name != match[1]:
                continue
            when = witness.timestamp(text, _b64(match[2], f"signature by {match[1]}"))
            if when is not None:
                found[witness.name] = max(when, found.get(witness.name, 0))
    return found


def add_lines(note: str, lines: Sequence[str]) -> str:
    """``note`` with the signature ``lines`` added (those it has already left out)."""
    _text, have = split_note(note)
    new = [line for line in lines if line not in have]
    return note + "".join(line + "\n" for line in dict.fromkeys(new))
