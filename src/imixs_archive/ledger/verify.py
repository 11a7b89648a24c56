"""``ledger verify``: the log against its signed checkpoints, the store against the log.

One pass over the log, in order (it streams, reports progress and resumes: the state of
the pass is kept in the ``verify-progress`` book every few thousand entries):

- every entry is checked against its leaf hash and read back; the tree is computed again
  from the leaves, and its root compared with every checkpoint it must agree with: the
  ledger's last one, one given (``--since``: an auditor's earlier copy), and the newest
  in the checkpoint folder. Each must be signed by a trusted key (``--key``, the ledger key
  file here, the checkpoint folder's ``ledger.pub``); a log that is shorter than one of them,
  or differs within it, was truncated, reordered or rewritten;
- the last entry about each subject is checked against the store: a snapshot logged as
  stored must be there with the content digest logged (computed again from its rows and
  its files' pieces; one gone where the operator says the Java service writes,
  ``ARCHIVE_JAVA_WRITES``, is its delete: counted apart and logged as removed
  ``elsewhere``, not tampering), one logged as deleted must be gone, a hold logged as placed must be
  there and one released gone;
- the store is then checked against the log: every snapshot must be logged. One stored
  without an entry is named: when its row carries this archive's seal it was written
  around the archive (tampering); when it does not (the Java service writes no seal, and
  an archive before the ledger wrote rows of its own) it is reported apart, as *not
  logged*, and logged as found.

The subjects table (each subject's last entry) makes this one pass: it is checked against
the log as the pass goes (a row behind the log is put right, one pointing at an entry of
another subject is a finding), and counting tells whether the store holds snapshots the
log does not know, so that only then are the snapshots walked one by one.

Writers go on while a pass runs (``serve`` sequences every few seconds), and a stopped
pass resumes later: a pass checks one view, the log up to its target (the size when it
began) and the subjects table as of that size. A row naming an entry past the target is a
change made since, no finding (``index_view.py``); a checkpoint signed past it is checked
by a consistency proof from the target's tree (as is, in a resumed pass, one below where it
resumed); a disagreement between the store and a subject changed since is none either
(``_changed_since``).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError, IntegrityError
from imixs_archive.jsonable import Jsonable
from imixs_archive.ledger.books import BEFORE_LEDGER, Subject
from imixs_archive.ledger.checkpoints import (
    PUBLIC_KEY_FILE,
    checkpoint_dir,
    log_folder,
    newest_copy,
    open_checkpoint,
)
from imixs_archive.ledger.entries import DELETED, ELSEWHERE, HOLD_PLACED, Entry, hold_subject
from imixs_archive.ledger.forks import ForkError, signed_path
from imixs_archive.ledger.found import not_logged_as_present
from imixs_archive.ledger.index_view import (
    KEPT,
    index_at_start,
    index_problems,
    rows_of,
    strays_left,
)
from imixs_archive.ledger.keys import key_path, load_signer
from imixs_archive.ledger.sequencer import RoundReport, Sequencer, state_of, subject_row
from imixs_archive.ledger.tiles import HEIGHT, edge_problem, tile_problem, tile_reader
from imixs_archive.ledger.tree import TREE, TreeState
from imixs_archive.ledger.witnesses import configured
from imixs_archive.timezones import now_ms
from imixs_archive.tlog.cosignature import CosignatureVerifier, cosigned_by
from imixs_archive.tlog.merkle import (
    Frontier,
    ProofError,
    consistency_proof,
    leaf_hash,
    verify_consistency,
)
from imixs_archive.tlog.note import Checkpoint, NoteError, Verifier

log = logging.getLogger(__name__)

PROGRESS = "verify-progress"
LAST = "verify"
SAVE_EVERY = 5000
LISTED = 1000
"""Ids of one kind kept in a saved pass (the report of a resumed pass counts the rest)."""

Progress = Callable[[str, int], None]
"""progress(stage, count): 'entries' as the log is walked, 'snapshots' as the store is."""


@dataclass
class LedgerReport(Jsonable):
    """What ``ledger verify`` found."""

    size: int = 0
    """Entries in the log (the head when the pass started)."""
    checked: int = 0
    """Entries checked (by this pass and the one it resumed)."""
    snapshots: int = 0
    """Snapshots in the store."""
    checkpoints: list[str] = field(default_factory=list)
    """What each checkpoint checked against was, and its size."""
    altered: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unlogged: list[str] = field(default_factory=list)
    """Snapshots with this archive's seal stored without an entry."""
    not_logged: list[str] = field(default_factory=list)
    """Snapshots without a seal and without an entry (the Java service's, or stored
    before the ledger): logged as found now."""
    removed_elsewhere: list[str] = field(default_factory=list)
    """Snapshots logged as stored and gone without a logged deletion, in a keyspace the
    Java service writes (``ARCHIVE_JAVA_WRITES``): its deletes (its history cleanup, its
    Inspect page), no finding; logged as deleted ``elsewhere`` now."""
    pending: int = 0
    """Changes still queued (made while the pass ran, or waiting for their store)."""
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    resumed_at: int | None = None
    finished: int = 0
    """When (epoch ms)."""

    @property
    def ok(self) -> bool:
        return not (self.problems or self.altered or self.removed or self.unlogged)

    JSON_EXTRA = ("ok",)


@dataclass
class _Pass:
    """A pass's state, saved to resume it."""

    target: int
    next: int = 0
    frontier: bytes = b""
    matched: int = 0
    present: int = 0
    held: int = 0
    fix: dict[str, list[str | int | bool]] = field(default_factory=dict)
    """Subjects whose row is behind the log: their last entry seen (idx, text, whether
    the subject had a row)."""
    report: dict[str, list[str]] = field(default_factory=dict)
    below: int = 0
    """Rows of the index naming an entry below the target when the pass began."""
    ahead: list[str] | None = field(default_factory=list)
    """Subjects whose row named an entry past the target when the pass began (None: too
    many to keep: every row is checked at the end, ``index_view.py``)."""
    changed: set[str] | None = field(default_factory=set)
    """Subjects the pass found changed since it began (their row names an entry past the
    target; None: too many to keep)."""

    def note_changed(self, subject: str) -> None:
        self.fix.pop(subject, None)
        if self.changed is not None:
            self.changed.add(subject)
            if len(self.changed) > KEPT:
                self.changed = None

    def encode(self) -> str:
        fields = {
            "target": self.target,
            "next": self.next,
            "frontier": base64.b64encode(self.frontier).decode(),
            "matched": self.matched,
            "present": self.present,
            "held": self.held,
            "fix": self.fix,
            "report": {name: ids[:LISTED] for name, ids in self.report.items()},
            "below": self.below,
            "ahead": self.ahead,
            "changed": None if self.changed is None else sorted(self.changed),
        }
        return json.dumps(fields)

    @classmethod
    def decode(cls, text: str) -> _Pass | None:
        try:
            fields = json.loads(text)
            return cls(
                target=int(fields["target"]),
                next=int(fields["next"]),
                frontier=base64.b64decode(fields["frontier"]),
                matched=int(fields["matched"]),
                present=int(fields["present"]),
                held=int(fields["held"]),
                fix={str(k): list(v) for k, v in fields["fix"].items()},
                report={str(k): list(v) for k, v in fields["report"].items()},
                below=int(fields["below"]),
                ahead=_names(fields["ahead"]),
                changed=None if fields["changed"] is None else set(_names(fields["changed"]) or ()),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def _names(value: object) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError("not a list")
    return [str(name) for name in value]


@dataclass
class _Against:
    """A checkpoint the recomputed tree must agree with."""

    what: str
    checkpoint: Checkpoint


def trusted_keys(
    settings: Settings, given: Sequence[Verifier], origin: str = ""
) -> tuple[list[Verifier], list[str]]:
    """The keys checkpoints are checked with: those given, the ledger key file's public
    half, the ``ledger.pub`` of the checkpoint folder of the log named ``origin``; and
    findings (a key there that is not the key file's)."""
    keys = list(given)
    problems: list[str] = []
    signer = None
    try:
        signer = load_signer(key_path(settings))
    except ArchiveError as exc:
        problems.append(str(exc))
    if signer is not None and not given:
        keys.append(signer.verifier())
    if checkpoint_dir(settings):
        path = log_folder(Path(checkpoint_dir(settings)), origin) / PUBLIC_KEY_FILE
        try:
            text = path.read_text(encoding="utf-8").strip()
            # empty: a process died between making the file and writing it
            folder_key = Verifier.from_vkey(text) if text else None
        except FileNotFoundError:
            folder_key = None
        except (OSError, ValueError) as exc:
            problems.append(f"the checkpoint folder's public key {path}: {exc}")
            folder_key = None
        if folder_key is not None:
            if signer is not None and folder_key.vkey() != signer.vkey():
                problems.append(
                    f"the ledger key in {key_path(settings)} is not the key the checkpoint "
                    f"folder recorded ({folder_key.vkey()}): the key was replaced"
                )
            if not given and folder_key not in keys:
                keys.append(folder_key)
    return keys, problems


def verify_ledger(
    archive: Archive,
    settings: Settings,
    *,
    keys: Sequence[Verifier] = (),
    since: str | None = None,
    read_all: bool = False,
    progress: Progress | None = None,
    restart: bool = False,
    log_found: bool = True,
    sequencer: Sequencer | None = None,
    witnesses: Sequence[CosignatureVerifier] | None = None,
    quorum: int | None = None,
) -> LedgerReport:
    """Check the log and the store (see the module's text). ``keys``: trusted public keys
    (else the key file's and the checkpoint folder's); ``since``: a checkpoint note kept
    earlier; ``read_all``: read every piece, not only those without a content address;
    ``restart``: begin again instead of resuming an unfinished pass; ``log_found``: log the
    snapshots found without an entry and without a seal; ``sequencer``: the one of this
    process, when it runs one (``serve``), else one for this pass; ``witnesses`` and
    ``quorum``: the witnesses' keys and how many of them must have cosigned the ledger's
    last checkpoint (else those configured, ``ARCHIVE_LEDGER_WITNESS_QUORUM``)."""
    tick = progress or (lambda _stage, _count: None)
    books = archive.ledger
    report = LedgerReport()
    with nullcontext(sequencer) if sequencer else Sequencer(archive, settings) as sequencing:
        try:
            drained = sequencing.drain()
        except ForkError as exc:  # the log as it is is still checked
            drained = RoundReport()
            report.problems.append(str(exc))
        head = sequencing.tree() or sequencing.start()
    if drained.busy:
        report.warnings.append(f"not sequenced first: {drained.busy}")
    trusted, problems = trusted_keys(settings, keys, head.origin)
    report.problems += problems
    if not trusted:
        report.problems.append(
            "no trusted public key to check the checkpoints with: give --key (the ledger's "
            "public key, as `imixs-archive ledger key` printed it where the key is)"
        )
    against = _checkpoints(archive, head, trusted, since, settings, report)
    if witnesses is None:
        witnesses = [w.key for w in configured(settings)]
    _check_cosigned(
        head, witnesses, settings.ledger_witness_quorum if quorum is None else quorum, report
    )
    unsigned = head.size - head.checkpoint_size
    if unsigned and now_ms() - head.checkpoint_at > 2000 * settings.ledger_checkpoint_seconds:
        report.warnings.append(
            f"{unsigned} entries are signed by no checkpoint, the last one is older than "
            f"{2 * settings.ledger_checkpoint_seconds:g} s: no process signs (is the key "
            "missing where serve runs?)"
        )
    saved = None if restart else _Pass.decode(books.head.text(PROGRESS) or "")
    if saved is not None and saved.target <= head.size:
        state = saved
        report.resumed_at = state.next
    else:
        state = _Pass(target=head.size)
        state.below, state.ahead = index_at_start(books, state.target)
    report.size = state.target
    _walk_log(archive, state, against, report, tick, read_all)
    books.head.write(PROGRESS, state.encode())
    _settle_fixes(archive, state, report, read_all)
    _walk_store(archive, state, report, tick, log_found)
    for name, ids in state.report.items():
        getattr(report, name)[:0] = [i for i in ids if i not in getattr(report, name)]
    if report.removed_elsewhere:
        report.warnings.append(
            f"{len(report.removed_elsewhere)} snapshot(s) removed by another writer (the Java "
            "service, ARCHIVE_JAVA_WRITES): "
            + ("logged as deleted elsewhere now" if log_found else "not logged")
        )
        for snapshot_id in report.removed_elsewhere if log_found else ():
            entry = Entry(DELETED, snapshot_id, now_ms(), "ledger verify", reason=ELSEWHERE)
            books.enqueue(entry)
    report.pending = _pending(archive, head)
    report.finished = now_ms()
    books.head.drop(PROGRESS)
    books.head.write(LAST, json.dumps(_summary(report)))
    return report


def _checkpoints(
    archive: Archive,
    head: TreeState,
    trusted: Sequence[Verifier],
    since: str | None,
    settings: Settings,
    report: LedgerReport,
) -> list[_Against]:
    """The checkpoints the log must agree with, each opened with a trusted key. One larger
    than the head read at the start was signed since (a copy written to the checkpoint folder
    while this ran) when the log holds that many entries now; else entries were removed."""
    notes: list[tuple[str, str]] = []
    if head.checkpoint:
        notes.append(("the ledger's last checkpoint", head.checkpoint))
    elif head.size:
        report.problems.append("the ledger has entries but no signed checkpoint")
    if since is not None:
        notes.append(("the checkpoint given (--since)", since))
    record = signed_path(key_path(settings))
    try:
        notes.append((f"the last checkpoint the key signed ({record.name})", record.read_text()))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as exc:
        report.problems.append(f"the ledger's record of what it signed, {record}: {exc}")
    if checkpoint_dir(settings):
        path = newest_copy(log_folder(Path(checkpoint_dir(settings)), head.origin))
        if path is not None:
            notes.append(
                (f"the checkpoint folder's newest checkpoint ({path.name})", path.read_text())
            )
        else:
            report.warnings.append("the checkpoint folder holds no checkpoint yet")
    against = []
    for what, note in notes:
        if not trusted:
            continue
        try:
            checkpoint = open_checkpoint(note, trusted, what)
        except IntegrityError as exc:
            report.problems.append(f"{exc} (signed by another key, or changed)")
            continue
        if checkpoint.origin != head.origin:
            report.problems.append(
                f"{what} is of another log ({checkpoint.origin!r}, this one is {head.origin!r})"
            )
            continue
        if checkpoint.size > head.size and _size_now(archive) < checkpoint.size:
            report.problems.append(
                f"{what} signed {checkpoint.size} entries, the log now holds {head.size}: "
                "entries were removed (the log, or the whole store, was put back or cut)"
            )
            continue
        report.checkpoints.append(f"{what}: {checkpoint.size} entries")
        against.append(_Against(what, checkpoint))
    return against


def quorum_problem(note: str, witnesses: Sequence[CosignatureVerifier], quorum: int) -> str:
    """Why ``note`` lacks the cosignatures of ``quorum`` of ``witnesses`` ('' when it has
    them), or which witnesses cosigned it (prefixed with '+')."""
    try:
        cosigned = cosigned_by(note, witnesses)
    except NoteError as exc:
        return f"a witness's cosignature on it is not valid: {exc}"
    names = ", ".join(sorted(cosigned)) or "none"
    if len(cosigned) < quorum:
        return (
            f"it is cosigned by {len(cosigned)} of the {len(witnesses)} witnesses ({names}); "
            f"{quorum} required"
        )
    return f"+cosigned by {len(cosigned)} of {len(witnesses)} witnesses ({names})"


def _check_cosigned(
    head: TreeState, witnesses: Sequence[CosignatureVerifier], quorum: int, report: LedgerReport
) -> None:
    """The ledger's last checkpoint against the witnesses: k of n cosignatures."""
    if not head.checkpoint or not (witnesses or quorum):
        return
    found = quorum_problem(head.checkpoint, witnesses, quorum)
    if found.startswith("+"):
        report.checkpoints.append(f"the ledger's last checkpoint: {found[1:]}")
    else:
        report.problems.append(f"the ledger's last checkpoint: {found}")


def _size_now(archive: Archive) -> int:
    text = archive.ledger.head.text(TREE)
    return TreeState.decode(text).size if text is not None else 0


def _walk_log(
    archive: Archive,
    state: _Pass,
    against: list[_Against],
    report: LedgerReport,
    tick: Progress,
    read_all: bool,
) -> None:
    books = archive.ledger
    frontier = Frontier.from_bytes(state.next, state.frontier) if state.next else Frontier()
    _compare_roots(frontier, against, report)
    start = expected = state.next
    tiles = tile_reader(books)
    for logged in books.entries(start=state.next, stop=state.target):
        if logged.idx != expected:
            report.problems.append(
                f"ledger entries {expected} to {logged.idx - 1} are missing from the log"
            )
            break
        if leaf_hash(logged.text.encode("utf-8")) != logged.leaf:
            report.problems.append(f"ledger entry {logged.idx} does not match its hash")
        try:
            entry = Entry.decode(logged.text)
        except ValueError as exc:
            report.problems.append(f"ledger entry {logged.idx} is not an entry: {exc}")
            entry = None
        for level, idx, digest in frontier.append(leaf_hash(logged.text.encode("utf-8"))):
            if level % HEIGHT == 0 and (problem := tile_problem(tiles, level, idx, digest)):
                report.problems.append(problem)
        if entry is not None:
            _check_entry(archive, state, logged.idx, entry, logged.text, report, read_all)
        expected = logged.idx + 1
        _compare_roots(frontier, against, report)
        state.next, report.checked = expected, expected
        if expected % SAVE_EVERY == 0:
            state.frontier = frontier.to_bytes()
            books.head.write(PROGRESS, state.encode())
        tick("entries", 1)
    else:
        if expected < state.target:
            report.problems.append(
                f"ledger entries {expected} to {state.target - 1} are missing from the log"
            )
    state.frontier = frontier.to_bytes()
    if frontier.size == state.target:
        if problem := edge_problem(tiles, frontier.size, frontier.root()):
            report.problems.append(problem)
        outside = [a for a in against if not start <= a.checkpoint.size <= state.target]
        _prove_consistent(archive, frontier, outside, report)


def _prove_consistent(
    archive: Archive, frontier: Frontier, against: list[_Against], report: LedgerReport
) -> None:
    """Checkpoints of a size the pass did not walk through: one signed after it began (its
    size past the target), or, in a resumed pass, one below where it resumed. The tree
    computed from the entries checked and each such checkpoint's are linked by a
    consistency proof (RFC 9162 2.1.4) from the store's tree tiles: it holds only when the
    smaller tree is the first part of the larger."""
    size, root = frontier.size, frontier.root()
    nodes = tile_reader(archive.ledger).node
    for item in against:
        signed = item.checkpoint
        try:
            if signed.size > size:
                proof = consistency_proof(size, signed.size, nodes)
                verify_consistency(size, signed.size, root, signed.root_hash, proof)
            else:
                proof = consistency_proof(signed.size, size, nodes)
                verify_consistency(signed.size, size, signed.root_hash, root, proof)
        except (ProofError, IntegrityError):
            report.problems.append(
                f"the log's first {min(size, signed.size)} entries are not those {item.what} "
                "signed: the log was changed, reordered or rewritten"
            )


def _compare_roots(frontier: Frontier, against: list[_Against], report: LedgerReport) -> None:
    for item in against:
        if item.checkpoint.size == frontier.size and item.checkpoint.root_hash != frontier.root():
            report.problems.append(
                f"the log's first {frontier.size} entries are not those {item.what} signed: "
                "the log was changed, reordered or rewritten"
            )


def _check_entry(
    archive: Archive,
    state: _Pass,
    idx: int,
    entry: Entry,
    text: str,
    report: LedgerReport,
    read_all: bool,
) -> None:
    """An entry, as the pass meets it: against its subject's row, and (when it is the
    subject's last) against the store."""
    row = archive.ledger.subject(entry.subject)
    if row is not None and row.idx >= state.target:
        state.note_changed(entry.subject)  # an entry past the log checked is its last
        return
    if row is None or row.idx < idx or (row.idx == idx and not _row_matches(row, entry)):
        # the row is behind: put right at the end
        state.fix[entry.subject] = [idx, text, row is not None]
        return
    if row.idx > idx:
        return  # a later entry is the subject's last
    state.matched += 1
    state.fix.pop(entry.subject, None)
    _check_store(archive, state, idx, entry, read_all)


def _row_matches(row: Subject, entry: Entry) -> bool:
    expected = subject_row(entry, row.idx)
    return (row.kind, row.digest) == (expected.kind, expected.digest)


def _check_store(archive: Archive, state: _Pass, idx: int, entry: Entry, read_all: bool) -> None:
    """The store against a subject's last entry."""
    found = state.report
    target = entry.target
    kind, _detail = state_of(entry)
    if kind == "present":
        try:
            stored = archive.stored_digest(target, read_all=read_all)
        except IntegrityError as exc:
            found.setdefault("altered", []).append(target)
            found.setdefault("problems", []).append(f"{target}: {exc}")
            state.present += 1
            return
        if stored is None:
            if _changed_since(archive, entry.subject, state.target):
                return
            if archive.storage.java_writes:  # the Java service's delete, not tampering
                found.setdefault("removed_elsewhere", []).append(target)
                return
            found.setdefault("removed", []).append(target)
            found.setdefault("problems", []).append(
                f"snapshot {target}: removed without a logged deletion (logged as "
                f"{entry.kind} by entry {idx})"
            )
            return
        state.present += 1
        if stored.digest != entry.digest and not _changed_since(
            archive, entry.subject, state.target
        ):
            found.setdefault("altered", []).append(target)
            found.setdefault("problems", []).append(
                f"snapshot {target}: its content is not what entry {idx} logged (altered)"
            )
    elif kind == "absent":
        if archive.exists(target) and not _changed_since(archive, entry.subject, state.target):
            found.setdefault("unlogged", []).append(target)
            found.setdefault("problems", []).append(
                f"snapshot {target}: stored again without an entry (entry {idx} logged its "
                "deletion)"
            )
    else:
        held = archive.holds.has(target, entry.case)
        if kind == "held":
            state.held += 1
        if held != (kind == "held") and not _changed_since(archive, entry.subject, state.target):
            found.setdefault("problems", []).append(
                f"legal hold of {target}: {'placed' if held else 'released'} without an entry "
                f"(entry {idx} logged it {entry.kind}{_case(entry.case)})"
            )


def _case(case: str) -> str:
    return f"; case {case!r}" if case else ""


def _settle_fixes(archive: Archive, state: _Pass, report: LedgerReport, read_all: bool) -> None:
    """Subjects whose row was behind the log: checked against their last entry, and their
    row put right (unless a change logged since moved it past the target); then the rows
    the pass did not meet (``index_view.py``)."""
    rows = []
    for subject, (idx, text, *_had) in sorted(state.fix.items()):
        now = archive.ledger.subject(subject)
        if now is not None and now.idx >= state.target:
            continue  # changed since: its row names a later entry
        entry = Entry.decode(str(text))
        _check_store(archive, state, int(idx), entry, read_all)
        rows.append(subject_row(entry, int(idx)))
    if rows:
        report.warnings.append(
            f"{len(rows)} subject(s) of the ledger's index did not name their last entry: "
            "put right (the index is derived from the log)"
        )
        archive.ledger.put_subjects(rows)
    fixed = sum(1 for _idx, _text, *had in state.fix.values() if had and had[0])
    state.fix.clear()
    books = archive.ledger
    if state.ahead is None or state.changed is None:
        report.problems += index_problems(books, books.subjects())
        return
    if strays_left(state.below, state.matched, fixed, state.changed, state.ahead):
        report.problems += index_problems(books, books.subjects())
    else:
        report.problems += index_problems(books, rows_of(books, state.ahead))


def _walk_store(
    archive: Archive, state: _Pass, report: LedgerReport, tick: Progress, log_found: bool
) -> None:
    """Snapshots the log does not know, walked one by one only when the counts differ."""
    count = 0
    for _snapshot_id in archive.index.iter_snapshot_ids():
        count += 1
    report.snapshots = count
    holds = archive.holds.logged_as()
    before = archive.ledger.head.text(BEFORE_LEDGER) is not None
    if count == state.present and len(holds) == state.held:
        if before:
            archive.ledger.head.drop(BEFORE_LEDGER)
        return
    if before:
        report.warnings.append(
            "the store holds snapshots from before the ledger: those not logged are logged "
            "as found now (as `imixs-archive ledger init` does)"
        )
    for snapshot_id, row in not_logged_as_present(archive, lambda: tick("snapshots", 1)):
        try:
            stored = archive.stored_digest(snapshot_id)
        except IntegrityError as exc:
            report.problems.append(f"snapshot {snapshot_id}: not logged, and {exc}")
            continue
        if stored is None:
            continue  # deleted meanwhile
        if row is not None and row.kind == DELETED:
            continue  # named by the pass over the log
        if _changed_since(archive, snapshot_id, state.target):
            continue  # stored while the pass ran: its entry is queued
        forged = "" if before else _written_around(archive, stored.sealed)
        if forged:
            report.unlogged.append(snapshot_id)
            report.problems.append(f"snapshot {snapshot_id}: {forged}")
        else:  # stored before the ledger, or by the Java service: logged as found
            report.not_logged.append(snapshot_id)
            if log_found:
                archive.log_found(snapshot_id, by="ledger verify", digest=stored)
    for hold, case in holds:
        subject = hold_subject(hold.uniqueid, case)
        row = archive.ledger.subject(subject)
        logged = row is not None and row.kind == HOLD_PLACED
        if not logged and not _changed_since(archive, subject, state.target):  # not meanwhile
            report.warnings.append(f"legal hold of {hold.uniqueid}: not logged{_case(case)}")
    if before and log_found and not report.unlogged:
        archive.ledger.head.drop(BEFORE_LEDGER)


def _written_around(archive: Archive, sealed: bool) -> str:
    """Why a complete snapshot without an entry was written around the archive ('' when
    it may be the Java service's: no seal, in a keyspace it can write)."""
    if sealed:
        return "stored with this archive's seal but without an entry (written around the archive)"
    if not archive.storage.java_may_write:
        return (
            "stored without an entry and without a seal in a store the Java service cannot "
            f"write ({archive.storage.name}): written around the archive"
        )
    return ""


def _changed_since(archive: Archive, subject: str, target: int) -> bool:
    """Whether a subject changed since the pass began: its last entry is past the log the
    pass checks, or an entry about it is queued (a change being made right now). Checked
    only where the store and the log disagree."""
    if _moved_past(archive, subject, target):
        return True
    head = archive.ledger.head.text(TREE)
    if head is None:
        return False
    slot = TreeState.decode(head).queue_from
    while slot <= now_ms() // 60_000 + 1:
        if any(q.subject == subject for q in archive.ledger.queued(slot)):
            return True
        slot += 1
    # Read again: a sequencer may have logged the entry, and taken it off the queue, while
    # the queue was read (it writes the row first).
    return _moved_past(archive, subject, target)


def _moved_past(archive: Archive, subject: str, target: int) -> bool:
    row = archive.ledger.subject(subject)
    return row is not None and row.idx >= target


def _pending(archive: Archive, head: TreeState) -> int:
    count = 0
    slot = head.queue_from
    last = now_ms() // 60_000 + 1
    while slot <= last:
        count += sum(1 for _ in archive.ledger.queued(slot))
        slot += 1
    return count


def _summary(report: LedgerReport) -> dict[str, object]:
    return {
        "ok": report.ok,
        "finished": report.finished,
        "size": report.size,
        "checked": report.checked,
        "snapshots": report.snapshots,
        "altered": len(report.altered),
        "removed": len(report.removed),
        "removed_elsewhere": len(report.removed_elsewhere),
        "unlogged": len(report.unlogged),
        "not_logged": len(report.not_logged),
        "problems": len(report.problems),
        "first_problems": report.problems[:5],
    }


def last_verify(archive: Archive) -> dict[str, object] | None:
    """The summary of the last finished ``ledger verify`` (any process), or None."""
    text = archive.ledger.head.text(LAST)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
