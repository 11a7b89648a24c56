"""The ledger's entries: what the archive did, one canonical JSON object each.

An entry's bytes are a leaf of the ledger's Merkle tree (``tlog/merkle.py``), so they are
written one way only: the keys sorted, no spaces, every non-ASCII character escaped
(``json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=True)``), UTF-8.
An auditor reads them as they are (``docs/ledger.md``):

- ``{"at":...,"by":...,"digest":...,"id":...,"kind":"stored","v":1}``: a snapshot was
  archived with this content digest (:func:`snapshot_digest`);
- ``"kind":"found"``: a snapshot already in the store was logged when it was found (by
  ``ledger init``, a ledger verify, or the sync meeting it): written before the ledger
  existed, or by another service (the Java Imixs-Archive) in a shared keyspace;
- ``"kind":"deleted"`` with a ``reason``: ``delete`` (a person, over the CLI, API or UI),
  ``retention`` (the retention policy), ``history`` (the instance's
  ``$snapshot.history``), ``snapshot.remove`` (the workflow's event, synced),
  ``elsewhere`` (another writer removed it: the Java service sharing the keyspace; logged
  when the sync or a ledger verify noticed it gone);
- ``"kind":"hold-placed"`` (with the hold's ``reason``) and ``"kind":"hold-released"``,
  whose subject is the process instance (``instance``, not ``id``) and, since store
  version 5, the case (``case``, the hold's reason: holds of several cases stack, each
  placed and released on its own).

``at`` is when the change was made (UTC, milliseconds, ISO 8601), ``by`` who made it (a
user name, ``sync``, ``retention`` ...). ``v`` is the entry format, 1.

The content digest of a snapshot is the SHA-256 over a few lines: a header, the snapshot
id, the SHA-256 of its XML as stored (its file contents emptied, the seal left out: the
same digest the row's seal carries), and a line per file, sorted by name, with the file's
digest: the SHA-256 over the SHA-256s (hex) of its pieces in order (for the pieces this
archive writes, their ids: the digest ``archive_files`` records).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from imixs_archive.timezones import epoch_ms, from_epoch_ms

FORMAT = 1
STORED = "stored"
FOUND = "found"
DELETED = "deleted"
HOLD_PLACED = "hold-placed"
HOLD_RELEASED = "hold-released"
SNAPSHOT_KINDS = (STORED, FOUND, DELETED)
HOLD_KINDS = (HOLD_PLACED, HOLD_RELEASED)
ELSEWHERE = "elsewhere"
"""The reason of a deletion another writer made (the Java service in a keyspace it shares,
``ARCHIVE_JAVA_WRITES``), logged when this archive noticed it."""
DELETE_REASONS = ("delete", "retention", "history", "snapshot.remove", ELSEWHERE)
HOLD_PREFIX = "hold:"
CASE_SEPARATOR = " / "


def hold_subject(uniqueid: str, case: str = "") -> str:
    """The ledger's subject of a hold: the instance's and case's (a hold placed before
    store version 5: the instance's)."""
    return HOLD_PREFIX + uniqueid + (CASE_SEPARATOR + case if case else "")


"""Subjects of hold entries: ``hold:`` and the process instance (snapshot ids never
start with it)."""
DIGEST_HEADER = "imixs-archive snapshot digest 1"


@dataclass(frozen=True)
class Entry:
    """One thing the archive did."""

    kind: str
    target: str
    """The snapshot id, or the process instance of a hold."""
    at: int
    """When (epoch milliseconds)."""
    by: str = ""
    digest: str = ""
    """``stored``/``found``: the snapshot's content digest (hex)."""
    reason: str = ""
    """``deleted``: why (one of ``DELETE_REASONS``); ``hold-placed``: the hold's reason."""
    case: str = ""
    """A hold's entries since store version 5: the case (the hold's reason) they place or
    release; holds of different cases of one instance are each a subject of their own.
    Empty in entries about a hold placed before (one per instance)."""

    def __post_init__(self) -> None:
        if self.kind not in SNAPSHOT_KINDS + HOLD_KINDS:
            raise ValueError(f"unknown ledger entry kind {self.kind!r}")
        if not self.target:
            raise ValueError("a ledger entry names what it is about")
        if self.kind in (STORED, FOUND) and len(self.digest) != 64:
            raise ValueError(f"a {self.kind} entry carries a SHA-256 digest")
        if self.kind == DELETED and self.reason not in DELETE_REASONS:
            raise ValueError(f"a deletion's reason is one of {DELETE_REASONS}")

    @property
    def subject(self) -> str:
        """What the entry is about, as the ledger's tables key it."""
        if self.kind in SNAPSHOT_KINDS:
            return self.target
        return hold_subject(self.target, self.case)

    @property
    def about_snapshot(self) -> bool:
        return self.kind in SNAPSHOT_KINDS

    def fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "v": FORMAT,
            "kind": self.kind,
            "id" if self.about_snapshot else "instance": self.target,
            "at": _iso(self.at),
            "by": self.by,
        }
        if self.digest:
            fields["digest"] = self.digest
        if self.reason or self.kind == HOLD_PLACED:
            fields["reason"] = self.reason
        if self.case:
            fields["case"] = self.case
        return fields

    def encode(self) -> str:
        """The entry's canonical text (its bytes, UTF-8, are the tree's leaf)."""
        return json.dumps(self.fields(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def decode(cls, text: str) -> Entry:
        """The entry a log row holds; ValueError when it is not one written this way."""
        try:
            fields = json.loads(text)
            kind = fields["kind"]
            target = fields["id" if kind in SNAPSHOT_KINDS else "instance"]
            entry = cls(
                kind=kind,
                target=target,
                at=_epoch_ms(fields["at"]),
                by=fields["by"],
                digest=fields.get("digest", ""),
                reason=fields.get("reason", ""),
                case=fields.get("case", ""),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a ledger entry: {exc}") from None
        if fields.get("v") != FORMAT or entry.encode() != text:
            raise ValueError("not a ledger entry in its canonical form")
        return entry

    def queued(self) -> str:
        """The entry as its queue row holds it: its fields as a JSON list (a fifth of the
        cost of the canonical text, which the sequencer writes into the log)."""
        fields = [self.kind, self.target, self.at, self.by, self.digest, self.reason]
        return json.dumps([*fields, self.case] if self.case else fields)

    @classmethod
    def from_queue(cls, text: str) -> Entry:
        """The entry a queue row holds; ValueError when it is not one."""
        try:
            kind, target, at, by, digest, reason, *rest = json.loads(text)
            case = rest[0] if len(rest) == 1 else ""
            if len(rest) > 1 or not all(
                isinstance(f, str) for f in (kind, target, by, digest, reason, case)
            ):
                raise TypeError("a field is not text, or one too many")
            return cls(kind, target, int(at), by, digest, reason, case)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not a queued ledger entry: {exc}") from None

    def same_change(self, other: Entry) -> bool:
        """Whether ``other`` records the change this one does again (a repeated store of
        the same content, a second delete, the same hold placed again): then it is not
        logged twice."""
        if self.subject != other.subject:
            return False
        if self.kind in (STORED, FOUND):
            return other.kind in (STORED, FOUND) and other.digest == self.digest
        if self.kind == HOLD_PLACED:
            return other.kind == HOLD_PLACED and other.reason == self.reason
        return other.kind == self.kind


def snapshot_digest(snapshot_id: str, xml_sha256: str, files: Iterable[tuple[str, str]]) -> str:
    """The content digest of a snapshot: its XML's SHA-256 (hex, the seal's) and (name,
    file digest) of each file (see the module's text)."""
    lines = [DIGEST_HEADER, json.dumps(snapshot_id), f"xml {xml_sha256}"]
    lines += sorted(f"file {json.dumps(name)} {digest}" for name, digest in files)
    return hashlib.sha256(("\n".join(lines) + "\n").encode("ascii")).hexdigest()


def _iso(epoch_ms: int) -> str:
    return from_epoch_ms(epoch_ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _epoch_ms(text: str) -> int:
    if not isinstance(text, str) or not text.endswith("Z"):
        raise ValueError("time not in UTC")
    return epoch_ms(dt.datetime.fromisoformat(text[:-1] + "+00:00"))
