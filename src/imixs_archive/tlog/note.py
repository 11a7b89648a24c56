"""C2SP signed notes with Ed25519 keys, and the C2SP tlog-checkpoint note body.

A signed note (https://c2sp.org/signed-note, the format of Go's
``golang.org/x/mod/sumdb/note``) is a UTF-8 text ending in a newline, a blank line, then
one line per signature: an em dash (U+2014), a space, the key name, a space, and the
standard base64 of the 4-byte big-endian key hash followed by the signature of the text
(final newline included, blank line excluded). No ASCII control character other than the
newline may appear anywhere.

A key is named (non-empty, valid UTF-8, no Unicode space, no ``+``) and identified by that
name and its 32-bit key hash: the first four bytes of SHA-256(name, a newline, the
algorithm byte 0x01 for Ed25519, the 32-byte public key). Keys travel as text:

* verifier key (public): ``<name>+<8 lowercase hex>+<base64(0x01 || public key)>``
* signer key (secret): ``PRIVATE+KEY+<name>+<8 lowercase hex>+<base64(0x01 || seed)>``

Reading a note, signatures by keys not given are passed over (their names are reported); a
signature by a given key must verify, and at least one must. This module is stricter than
Go in two places: base64 must be canonical (no stray bits, padding as encoded), and every
distinct signature line by a known key is verified (Go checks only the first per key).

A checkpoint (https://c2sp.org/tlog-checkpoint) is a note text of at least three lines:
the log's origin, its tree size in decimal (no leading zeros), the base64 RFC 6962 root
hash, then optional non-empty extension lines.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

ALG_ED25519 = 0x01
"""The signature type byte of Ed25519 keys."""
MAX_NOTE_BYTES = 1 << 20
"""The largest note ``open_note`` reads, in UTF-8 bytes."""
MAX_SIGNATURES = 100
"""The most signature lines a note may carry (Go's limit; the spec asks for at least 16)."""

_SIGNATURE_PREFIX = "— "
_PRIVATE_PREFIX = "PRIVATE+KEY+"
_HEX8 = re.compile(r"[0-9a-f]{8}")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f]")


class NoteError(ValueError):
    """A note, key or checkpoint that is malformed, or a signature by a known key that fails."""


class UnverifiedNote(NoteError):
    """A well-formed note that no signature by any of the given keys verifies."""


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise NoteError(f"{what} is not valid UTF-8 (lone surrogate at {error.start})") from None


def _check_controls(text: str, what: str) -> None:
    found = _CONTROL.search(text)
    if found:
        raise NoteError(f"{what} contains control character U+{ord(found.group()):04X}")


def _check_name(name: str, what: str = "key name") -> None:
    if not name:
        raise NoteError(f"{what} is empty")
    _utf8(name, what)
    for char in name:
        if char == "+" or char.isspace() or ord(char) < 0x20:
            raise NoteError(f"{what} {name!r} contains {char!r} (no spaces, '+' or controls)")


def _b64decode(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise NoteError(f"{what} is not standard base64: {text!r}") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise NoteError(f"{what} is not canonical base64: {text!r}")
    return raw


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _key_hash(name: str, public_key: bytes) -> int:
    digest = hashlib.sha256(_utf8(name, "key name") + b"\n" + bytes([ALG_ED25519]) + public_key)
    return int.from_bytes(digest.digest()[:4], "big")


def _check_key_hash(name: str, key_hash: int, public_key: bytes) -> None:
    expected = _key_hash(name, public_key)
    if key_hash != expected:
        raise NoteError(
            f"key hash {key_hash:08x} of {name} does not match its key ({expected:08x})"
        )


def _parse_key(encoded: str, what: str) -> tuple[str, int, bytes]:
    """``name+hash+base64`` (the base64 may hold ``+``): the name, hash and 32 key bytes."""
    parts = encoded.split("+", 2)
    if len(parts) != 3:
        raise NoteError(f"{what} is not <name>+<hash>+<key>")
    name, hash_hex, key64 = parts
    _check_name(name)
    if not _HEX8.fullmatch(hash_hex):
        raise NoteError(f"{what} key hash {hash_hex!r} is not 8 lowercase hex digits")
    key = _b64decode(key64, f"{what} data")
    if not key or key[0] != ALG_ED25519:
        raise NoteError(f"{what} has an unknown algorithm (want 0x01 for Ed25519)")
    if len(key) != 33:
        raise NoteError(f"{what} holds {len(key) - 1} key bytes, want 32")
    return name, int(hash_hex, 16), key[1:]


@dataclass(frozen=True)
class Verifier:
    """An Ed25519 public key with its name; checks signatures by that key."""

    name: str
    key_hash: int
    public_key: bytes

    def __post_init__(self) -> None:
        _check_name(self.name)
        if len(self.public_key) != 32:
            raise NoteError(f"an Ed25519 public key has 32 bytes, not {len(self.public_key)}")
        _check_key_hash(self.name, self.key_hash, self.public_key)

    def verify(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` is this key's Ed25519 signature of ``message``."""
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except InvalidSignature:
            return False
        return True

    def vkey(self) -> str:
        """The verifier key text, ``<name>+<hash>+<base64(0x01 || public key)>``."""
        return f"{self.name}+{self.key_hash:08x}+{_b64(bytes([ALG_ED25519]) + self.public_key)}"

    @classmethod
    def from_vkey(cls, vkey: str) -> Verifier:
        """Parse a verifier key; ``NoteError`` if malformed or its hash does not match."""
        return cls(*_parse_key(vkey, "verifier key"))


@dataclass(frozen=True)
class Signer:
    """An Ed25519 private key (its 32-byte seed) with its name; signs notes."""

    name: str
    key_hash: int
    seed: bytes = field(repr=False)
    _private: Ed25519PrivateKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_name(self.name)
        if len(self.seed) != 32:
            raise NoteError(f"an Ed25519 seed has 32 bytes, not {len(self.seed)}")
        object.__setattr__(self, "_private", Ed25519PrivateKey.from_private_bytes(self.seed))
        _check_key_hash(self.name, self.key_hash, self.public_key)

    @property
    def public_key(self) -> bytes:
        """The 32-byte Ed25519 public key."""
        return self._private.public_key().public_bytes_raw()

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message``."""
        return self._private.sign(message)

    def skey(self) -> str:
        """The secret signer key text, ``PRIVATE+KEY+<name>+<hash>+<base64(0x01 || seed)>``."""
        data = _b64(bytes([ALG_ED25519]) + self.seed)
        return f"{_PRIVATE_PREFIX}{self.name}+{self.key_hash:08x}+{data}"

    def vkey(self) -> str:
        """The public verifier key text for this key."""
        return self.verifier().vkey()

    def verifier(self) -> Verifier:
        """The verifier of this key's signatures."""
        return Verifier(self.name, self.key_hash, self.public_key)

    @classmethod
    def from_skey(cls, skey: str) -> Signer:
        """Parse a signer key; ``NoteError`` if malformed or its hash does not match."""
        if not skey.startswith(_PRIVATE_PREFIX):
            raise NoteError("signer key does not start with PRIVATE+KEY+")
        return cls(*_parse_key(skey[len(_PRIVATE_PREFIX) :], "signer key"))


def generate_signer(name: str) -> Signer:
    """A new random Ed25519 key named ``name``."""
    _check_name(name)
    seed = Ed25519PrivateKey.generate().private_bytes_raw()
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()
    return Signer(name, _key_hash(name, public), seed)


def sign_note(text: str, *signers: Signer) -> str:
    """The note of ``text`` signed by each of ``signers``, in order."""
    if not text.endswith("\n"):
        raise NoteError("note text must be non-empty and end with a newline")
    message = _utf8(text, "note text")
    _check_controls(text, "note text")
    if not signers:
        raise NoteError("a note needs at least one signer")
    if len(signers) > MAX_SIGNATURES:
        raise NoteError(f"a note carries at most {MAX_SIGNATURES} signatures")
    keys = {(signer.name, signer.key_hash) for signer in signers}
    if len(keys) != len(signers):
        raise NoteError("the same key is given twice")
    lines = [
        f"{_SIGNATURE_PREFIX}{s.name} {_b64(s.key_hash.to_bytes(4, 'big') + s.sign(message))}\n"
        for s in signers
    ]
    note = text + "\n" + "".join(lines)
    if len(_utf8(note, "note")) > MAX_NOTE_BYTES:
        raise NoteError(f"the signed note would exceed {MAX_NOTE_BYTES} bytes")
    return note


@dataclass(frozen=True)
class OpenedNote:
    """A note's text with the names of the known keys that signed it."""

    text: str
    verified: tuple[str, ...]
    """Names of the given keys whose signatures verified, each once, in note order."""
    unknown: tuple[str, ...]
    """Names on the distinct signature lines by keys that were not given, in note order."""


def _decode_note(note: str | bytes) -> str:
    if len(note) > MAX_NOTE_BYTES:  # each character takes at least one byte
        raise NoteError(f"note is larger than {MAX_NOTE_BYTES} bytes")
    if isinstance(note, str):
        if len(_utf8(note, "note")) > MAX_NOTE_BYTES:
            raise NoteError(f"note is larger than {MAX_NOTE_BYTES} bytes")
        return note
    try:
        return note.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NoteError(f"note is not valid UTF-8 (at byte {error.start})") from None


def open_note(note: str | bytes, verifiers: Sequence[Verifier]) -> OpenedNote:
    """Parse ``note`` strictly and check its signatures against ``verifiers``.

    ``NoteError`` if the note is malformed, if a signature by a given key does not verify,
    or if two different given keys share a name and hash; ``UnverifiedNote`` if no
    signature by a given key is present.
    """
    msg = _decode_note(note)
    _check_controls(msg, "note")
    split = msg.rfind("\n\n")
    if split < 0:
        raise NoteError("note has no blank line before its signatures")
    text, block = msg[: split + 1], msg[split + 2 :]
    if not block.endswith("\n"):
        raise NoteError("note must end with signature lines, each ending in a newline")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"note has {len(lines)} signature lines, more than {MAX_SIGNATURES}")

    known: dict[tuple[str, int], list[Verifier]] = {}
    for verifier in verifiers:
        same = known.setdefault((verifier.name, verifier.key_hash), [])
        if verifier not in same:
            same.append(verifier)
    message = text.encode("utf-8")
    verified: list[str] = []
    unknown: list[str] = []
    seen_lines: set[str] = set()
    seen_keys: list[str] = []
    for line in lines:
        if not line.startswith(_SIGNATURE_PREFIX):
            raise NoteError(f"signature line {line!r} does not start with an em dash and a space")
        name, _, sig64 = line[len(_SIGNATURE_PREFIX) :].partition(" ")
        _check_name(name, "signature key name")
        signed = _b64decode(sig64, f"signature by {name}")
        if len(signed) < 5:
            raise NoteError(f"signature by {name} is too short")
        key_hash = int.from_bytes(signed[:4], "big")
        if line in seen_lines:
            continue
        seen_lines.add(line)
        seen_keys.append(f"{name}+{key_hash:08x}")
        candidates = known.get((name, key_hash), [])
        if not candidates:
            unknown.append(name)
            continue
        if len(candidates) > 1:
            raise NoteError(f"ambiguous key {name}+{key_hash:08x}: two given keys share it")
        if not candidates[0].verify(message, signed[4:]):
            raise NoteError(f"invalid signature by known key {name}+{key_hash:08x}")
        if name not in verified:
            verified.append(name)
    if not verified:
        tried = ", ".join(f"{n}+{h:08x}" for n, h in known) or "none"
        raise UnverifiedNote(
            f"no signature by a known key verifies the note (known keys: {tried}; "
            f"signatures by: {', '.join(seen_keys)})"
        )
    return OpenedNote(text, tuple(verified), tuple(unknown))


def _check_line(line: str, what: str) -> None:
    if not line:
        raise NoteError(f"{what} is empty")
    if "\n" in line:
        raise NoteError(f"{what} contains a newline")
    _utf8(line, what)
    _check_controls(line, what)


@dataclass(frozen=True)
class Checkpoint:
    """A C2SP tlog-checkpoint note body: a log's origin, tree size and root hash."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_line(self.origin, "checkpoint origin")
        if isinstance(self.size, bool) or not 0 <= self.size < 1 << 64:
            raise NoteError(f"checkpoint size {self.size!r} is not an unsigned 64-bit number")
        if len(self.root_hash) != 32:
            raise NoteError(f"checkpoint root hash has {len(self.root_hash)} bytes, want 32")
        for extension in self.extensions:
            _check_line(extension, "checkpoint extension line")

    def body(self) -> str:
        """The note text: origin, size, base64 root hash, extensions, each line ending "\\n"."""
        lines = [self.origin, str(self.size), _b64(self.root_hash), *self.extensions]
        return "".join(line + "\n" for line in lines)

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """Parse a checkpoint body strictly; ``NoteError`` if it is malformed."""
        if not text.endswith("\n"):
            raise NoteError("checkpoint body must end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise NoteError(f"checkpoint body has {len(lines)} lines, want at least 3")
        origin, size_text, root_text, *extensions = lines
        if len(size_text) > 20 or not _DECIMAL.fullmatch(size_text):
            raise NoteError(f"checkpoint size {size_text!r} is not a decimal without leading 0s")
        root_hash = _b64decode(root_text, "checkpoint root hash")
        return cls(origin, int(size_text), root_hash, tuple(extensions))
