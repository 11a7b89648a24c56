"""What the harness knows, kept apart from the store: every snapshot it sent (so that a
visible one can be compared with it), the snapshots that must be visible, legal holds.

The rules, per round:

* A snapshot **must** be visible once an operation acknowledged it (an import that exited 0
  and counted it, a push answered 2xx, a sync that deleted its event from the workflow's
  log), and from then on, until a delete, retention or ``snapshot.remove`` may have
  removed it. What may remove it in a round is known before the round starts (the
  schedule names the targets; retention may take any snapshot of an expired instance not
  firmly held), so a snapshot that vanishes otherwise is a lost snapshot.
* A snapshot **may** be visible once it was sent by any operation, acknowledged or not
  (a killed import, a push whose answer was lost); visible, it must read back equal to
  what was sent, whole. Nothing never sent may be visible.
* After each round the model **settles**: what is visible and equal must stay visible from
  then on (a killed delete that left the snapshot is as if it never ran; a killed import
  that left it complete is as if acknowledged), what is not visible is no longer required.
* A snapshot restored into the workflow that did not hold it is stored there again with
  the workflow's own ``$modified`` (``POST /snapshot``, as the engine saves it), and the
  sync may archive that version (after a delete): a visible snapshot equal to either
  version is right (:meth:`Model.version`), its day and figures those of the one found.
* A legal hold acknowledged before a round holds during it: no snapshot of the instance
  may go, a delete of it must be refused (exit 8). A hold placed or released in a round is
  in doubt until the round ends, then settled from the store.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from imixs_archive.document.conventions import FILE_ITEM, iter_files, modified_time, origin_id
from imixs_archive.document.model import BinaryStream, Document


@dataclass(frozen=True)
class Sent:
    """One snapshot as the harness sent it."""

    snapshot_id: str
    uniqueid: str
    fingerprint: str
    """SHA-256 over the document's canonical form (file contents by their SHA-256)."""
    bare: str
    """The same without the attachments' contents (as a load without files reads it)."""
    files: tuple[tuple[str, str, str, int], ...]
    """(name, MD5 upper-case hex, SHA-256 hex, size) of each attachment."""
    day: str
    """UTC day of ``$modified``."""
    expires: bool
    """Of an instance whose retention period is over."""


def fingerprint(doc: Document, digest: Callable[[object], str] | None = None) -> str:
    """SHA-256 over the canonical form of ``doc`` with each attachment's content replaced
    by its SHA-256 (``digest`` of the content value: a reader may cache it per file)."""
    digest = digest or content_digest
    copy = doc.copy()
    if FILE_ITEM in copy:
        copy[FILE_ITEM] = [
            {
                name: [values[0], "sha256:" + digest(values[1]), *values[2:]]
                if len(values) > 1
                else values
                for name, values in file_map.items()
            }
            for file_map in copy.get_values(FILE_ITEM)
        ]
    return hashlib.sha256(repr(copy.canonical()).encode()).hexdigest()


def bare_fingerprint(doc: Document) -> str:
    """:func:`fingerprint` of a snapshot read without its files' contents."""
    return fingerprint(doc, lambda _content: "")


def content_digest(value: object) -> str:
    return hashlib.sha256(content_of(value)).hexdigest()


def content_of(value: object) -> bytes:
    if isinstance(value, BinaryStream):
        return value.read_all()
    assert isinstance(value, bytes | bytearray | memoryview), type(value)
    return bytes(value)


def describe(
    doc: Document, expires: bool, digests: Mapping[str, tuple[str, str, int]] | None = None
) -> Sent:
    """What the model keeps of a snapshot sent. ``digests``: file name -> (MD5, SHA-256,
    size) where the maker of ``doc`` knows them (not hashed again)."""
    files = []
    known: dict[int, str] = {}
    for entry in iter_files(doc):
        if digests is not None and entry.name in digests:
            md5, sha, size = digests[entry.name]
        else:
            data = content_of(entry.content)
            md5, sha = hashlib.md5(data).hexdigest().upper(), hashlib.sha256(data).hexdigest()
            size = len(data)
        known[id(entry.content)] = sha
        files.append((entry.name, md5, sha, size))

    def digest(value: object) -> str:
        return known[id(value)] if id(value) in known else content_digest(value)

    sid = str(doc.get_first("$uniqueid"))
    day = modified_time(doc).astimezone(dt.UTC).date().isoformat()
    return Sent(
        sid,
        origin_id(sid),
        fingerprint(doc, digest),
        bare_fingerprint(doc),
        tuple(sorted(files)),
        day,
        expires,
    )


@dataclass
class Model:
    sent: dict[str, Sent] = field(default_factory=dict)
    required: dict[str, int] = field(default_factory=dict)
    """Snapshot id -> the round since which it must be visible."""
    held: dict[str, bool | None] = field(default_factory=dict)
    """Process instance -> held (True), released (False), in doubt (None)."""
    touched: dict[str, int] = field(default_factory=dict)
    """Process instance -> the last round that sent a snapshot of it or changed its hold."""
    synced: set[str] = field(default_factory=set)
    """Snapshots whose ``snapshot.add`` event the sync completed (acknowledged once)."""
    in_workflow: set[str] = field(default_factory=set)
    """Snapshots the workflow double holds (synced ones, restored ones): the sync's
    catch-up may archive them again at any time, also after a delete."""
    versions: dict[str, dict[str, Sent]] = field(default_factory=dict)
    """Snapshot id -> the other versions of it the workflow held, by fingerprint (one
    restored into a workflow that did not hold it, stored there with its own
    ``$modified``)."""
    archived: dict[str, Sent] = field(default_factory=dict)
    """Snapshot id -> the other version found archived at the last check."""

    def send(self, sent: Sent, round_no: int) -> None:
        self.sent.setdefault(sent.snapshot_id, sent)
        self.touched[sent.uniqueid] = round_no

    def also_sent(self, sent: Sent) -> None:
        """Another version of a snapshot sent (the workflow's, after a restore)."""
        first = self.sent.get(sent.snapshot_id)
        if first is not None and first.fingerprint != sent.fingerprint:
            self.versions.setdefault(sent.snapshot_id, {})[sent.fingerprint] = sent

    def version(self, snapshot_id: str, fingerprint: str, *, bare: bool = False) -> Sent | None:
        """The version of a snapshot sent whose fingerprint (``bare``: without the files'
        contents) is ``fingerprint``; None when none is."""
        first = self.sent.get(snapshot_id)
        if first is None:
            return None  # never sent (a version of it is noted only once it was)
        for sent in (first, *self.versions.get(snapshot_id, {}).values()):
            if (sent.bare if bare else sent.fingerprint) == fingerprint:
                return sent
        return None

    def as_archived(self, snapshot_id: str) -> Sent:
        """The version of a snapshot the last check found archived (the first sent when
        that one, or when not seen yet)."""
        return self.archived.get(snapshot_id) or self.sent[snapshot_id]

    def acknowledge(self, snapshot_id: str, round_no: int) -> None:
        self.required.setdefault(snapshot_id, round_no)

    def firmly_held(self, uniqueid: str) -> bool:
        return self.held.get(uniqueid) is True

    def removable(self, targets: Iterable[str], retention: bool) -> set[str]:
        """The snapshots a round may remove: those named (deletes, removes) and, when
        retention may run, those of expired instances not firmly held; never one of a
        firmly held instance."""
        out = {sid for sid in targets if not self.firmly_held(origin_id(sid))}
        if retention:
            out |= self.expiring()
        return out

    def expiring(self) -> set[str]:
        """Every snapshot sent of an expired instance that is not firmly held."""
        return {
            sid
            for sid, sent in self.sent.items()
            if sent.expires and not self.firmly_held(sent.uniqueid)
        }

    def settle(self, visible: Iterable[str], round_no: int, disturbed: set[str]) -> None:
        """After the checks of a round: what is visible (and was found equal) is required
        from now on, what is not is not. A snapshot the round may have removed or sent
        again counts as required from the next round on (it may have been gone a while)."""
        seen = set(visible)
        for sid in list(self.required):
            if sid not in seen or sid in disturbed:
                del self.required[sid]
        for sid in seen:
            self.required.setdefault(sid, round_no + 1)

    def stable_since(self, round_no: int) -> set[str]:
        """Snapshots required since before ``round_no`` began and still."""
        return {sid for sid, since in self.required.items() if since <= round_no}

    def expected_stats(
        self, visible: Iterable[str], found: Mapping[str, Sent] | None = None
    ) -> dict[str, object]:
        """What ``stats`` must say of the snapshots ``visible`` (``found``: the version
        read back of each, where known)."""
        found = found or {}
        sents = [found.get(sid) or self.sent[sid] for sid in visible]
        sizes: dict[str, int] = {}
        by_day: dict[str, int] = {}
        logical = 0
        for sent in sents:
            by_day[sent.day] = by_day.get(sent.day, 0) + 1
            for _name, md5, _sha, size in sent.files:
                sizes[md5] = size
                logical += size
        return {
            "snapshots": len(sents),
            "instances": len({sent.uniqueid for sent in sents}),
            "files": len(sizes),
            "file_bytes": sum(sizes.values()),
            "logical_bytes": logical,
            "by_day": dict(sorted(by_day.items())),
        }
