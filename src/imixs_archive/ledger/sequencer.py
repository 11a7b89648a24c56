"""The sequencer: queued entries into the log, one process at a time, and checkpoints.

Entries are queued with the change they record (``archive/snapshots.py``,
``archive/holds.py``); a round takes them into the log (``archive_ledger_entries``), in the
order they were made, as Trillian separates its queue from its sequencer:

1. **The lease** (the ``lease`` book, set by compare and set: a lightweight transaction on
   Cassandra) names the one process that sequences for the next 30 seconds; others skip
   their round. It only saves work: what keeps the log whole is below.
2. **Entries past the head** (written by a round that stopped before moving it) are taken
   over as they are: the log's rows are written once (insert if absent), so whoever
   moves the head next agrees with them.
3. **The queue** of the minutes since the oldest unfinished one (and always the last five,
   for writers whose clocks run behind; every ten minutes all of it) is read, up to a few
   thousand entries a round. A subject's entries are taken in order; one that repeats the
   last logged state of its subject (a store of the same content, a second delete) is
   dropped; the last of a subject is logged only once the store agrees with it (the
   snapshot is there, or gone; the hold placed, or released): a change still being made
   waits, one that never happened (its process died first) is dropped after ten minutes.
   When the store does not agree and the round stopped at its limit (or the entry is old
   enough to be dropped), the queue beyond what it read is looked at for a later change of
   the subject, which explains the store (``queue_window.py``): then the entry is logged.
4. **The entries, their tree's tiles and each subject's last entry** are written, then the
   head moves by compare and set from the state read at the start to the new one (with a
   new checkpoint when one is due). A head another process moved meanwhile ends the round:
   nothing it wrote is lost (step 2), its queue rows stay for the next round.
5. **After the head moved**, the checkpoint goes to the checkpoints table and the checkpoint
   folder, and the queue rows of what was logged or dropped are deleted.

A crash anywhere leaves a state the next round completes: entries past the head are
taken over, queue rows still there are dropped as taken (``Sequencer._taken``), and a
process's first round records the head's checkpoint (step 5) again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import secrets
import threading
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import IntegrityError, StoreError
from imixs_archive.jsonable import Jsonable
from imixs_archive.ledger.books import LedgerBooks, Queued, Subject
from imixs_archive.ledger.checkpoints import (
    checkpoint_dir,
    keep_copy,
    log_folder,
    newest_copy,
    open_checkpoint,
    sign_checkpoint,
)
from imixs_archive.ledger.entries import (
    DELETED,
    FOUND,
    HOLD_PLACED,
    HOLD_RELEASED,
    STORED,
    Entry,
)
from imixs_archive.ledger.forks import (
    NEW_LOG_STEP,
    ForkError,
    fork_from,
    last_signed,
    record_fork,
    refused,
    remember_signed,
)
from imixs_archive.ledger.keys import create_signer, key_path, load_signer, origin_of
from imixs_archive.ledger.queue_window import Later, Window, read_window
from imixs_archive.ledger.tiles import TileReader, grow_tiles, tile_reader
from imixs_archive.ledger.tree import TREE, TreeState, read_tree
from imixs_archive.ledger.witnesses import Witnessing, ahead_refusal, configured
from imixs_archive.runtime import process_actor
from imixs_archive.timezones import now_ms
from imixs_archive.tlog.cosignature import add_lines
from imixs_archive.tlog.merkle import (
    ProofError,
    consistency_proof,
    leaf_hash,
    verify_consistency,
)
from imixs_archive.tlog.note import Checkpoint, Signer, Verifier

log = logging.getLogger(__name__)

LEASE = "lease"
LEASE_MS = 30_000
SETTLE_MS = 10 * 60 * 1000
"""How long an entry whose change the store does not show waits before it is dropped."""
BEHIND_SLOTS = 5
"""Minutes of the queue always read again (writers whose clocks run behind)."""
FULL_PASS_MS = 10 * 60 * 1000
"""How often a process's rounds read the whole queue, not only the minutes since the
oldest unfinished one: an entry a writer whose clock ran more than the five minutes
behind queued is logged late, not lost."""
ROUND_ENTRIES = 5000
"""Queued entries one round reads at most (whole minutes: it may read more)."""
HEAD_SLACK_SLOTS = 30
"""Minutes the head's ``queue_from`` may trail the queue's window before a round with
nothing else to write moves it: an idle ledger writes its head every half hour, not every
minute, and a round reads at most this many empty minutes more."""


@dataclass
class RoundReport(Jsonable):
    """What a round (or several, :meth:`Sequencer.drain`) did."""

    size: int = 0
    logged: int = 0
    adopted: int = 0
    repeated: int = 0
    abandoned: int = 0
    damaged: int = 0
    waiting: int = 0
    checkpoint: int | None = None
    """The size a new checkpoint signed, when one was."""
    busy: str = ""
    """Why the round did nothing: another process sequences, or moved the head."""
    more: bool = False
    """The round stopped at its limit: more is queued."""
    notes: list[str] = field(default_factory=list)

    def add(self, other: RoundReport) -> None:
        for name in ("logged", "adopted", "repeated", "abandoned", "damaged"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.size, self.waiting, self.more = other.size, other.waiting, other.more
        self.busy = other.busy
        self.checkpoint = other.checkpoint if other.checkpoint is not None else self.checkpoint
        self.notes += [note for note in other.notes if note not in self.notes]


def state_of(entry: Entry) -> tuple[str, str]:
    """What an entry leaves its subject in: present with a digest, absent, held for a
    reason, free. Two entries leaving the same state record one change."""
    if entry.kind in (STORED, FOUND):
        return "present", entry.digest
    if entry.kind == DELETED:
        return "absent", ""
    if entry.kind == HOLD_PLACED:
        return "held", entry.reason
    return "free", ""


def subject_row(entry: Entry, idx: int) -> Subject:
    """The subjects-table row of an entry logged as number ``idx``."""
    state, detail = state_of(entry)
    digest = detail if state == "present" else (_reason_digest(detail) if detail else "")
    return Subject(entry.subject, idx, entry.kind, digest)


def _reason_digest(reason: str) -> str:
    return hashlib.sha256(reason.encode("utf-8")).hexdigest()


def _same_state(last: Subject, entry: Entry) -> bool:
    state, _detail = state_of(entry)
    kinds = {
        "present": (STORED, FOUND),
        "absent": (DELETED,),
        "held": (HOLD_PLACED,),
        "free": (HOLD_RELEASED,),
    }[state]
    return last.kind in kinds and last.digest == subject_row(entry, last.idx).digest


class Sequencer:
    """Sequences the ledger of one archive; signs checkpoints when it holds the key."""

    def __init__(self, archive: Archive, settings: Settings) -> None:
        self.archive = archive
        self.books: LedgerBooks = archive.ledger
        self.settings = settings
        self.holder = f"{process_actor()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.signer: Signer | None = None
        self.key_note = ""
        """Why this process signs no checkpoints (no key here, or another key)."""
        self._key_checked = False
        self._recorded = False
        """Whether this process recorded the head's checkpoint (its first round does)."""
        self._lock = threading.Lock()
        self._last_full_pass = 0
        self.witnessing = Witnessing(configured(settings))
        self._extended: set[tuple[Checkpoint, tuple[int, bytes]]] = set()
        """(checkpoint signed, head) last found an extension of it: not computed again."""

    # ---- the head ---------------------------------------------------------------------

    def tree(self) -> TreeState | None:
        return read_tree(self.books)

    def start(self) -> TreeState:
        """The ledger's head; a new, empty one (and its key) when there is none."""
        state = self.tree()
        if state is None:
            path = key_path(self.settings)
            signer = load_signer(path) or create_signer(path, origin_of(self.settings))
            first = self._first_slot()
            initial = TreeState.empty(
                signer.name, signer.vkey(), first if first is not None else now_ms() // 60_000
            )
            found = self.books.head.open(TREE, initial.encode())
            state = initial if found is None else TreeState.decode(found)
        self._check_key(state)
        return state

    def _first_slot(self) -> int | None:
        """The oldest minute of the whole queue, or None when it cannot be read: a pass
        over every minute meets the tombstones of every entry logged since the store last
        purged them (on Cassandra, 100,000 fail a read: a busy archive's ten days). It is a
        safety net for writers whose clocks run behind; the round goes on without it."""
        try:
            return self.books.first_slot()
        except StoreError as exc:
            log.warning(
                "ledger: the whole queue could not be read (%s); read from its oldest "
                "unfinished minute on, as every round does",
                exc,
            )
            return None

    def can_sign(self, state: TreeState | None) -> bool:
        """Whether this process holds the ledger's key (before its first round too: a
        ledger not started yet is signed by whoever starts it with a key)."""
        if state is None:
            return self.signer is not None or load_signer(key_path(self.settings)) is not None
        self._check_key(state)
        return self.signer is not None

    def _check_key(self, state: TreeState) -> None:
        if self._key_checked:
            return
        path = key_path(self.settings)
        signer = load_signer(path)
        if signer is None:
            self.key_note = (
                f"no ledger key in {path}: this process signs no checkpoints (the ledger's "
                f"key is {state.key}; copy its file here to sign)"
            )
        elif signer.vkey() != state.key:
            self.key_note = (
                f"the key in {path} ({signer.vkey()}) is not the ledger's ({state.key}): "
                "this process signs no checkpoints"
            )
        else:
            self.signer = signer
        if self.key_note:
            log.warning("%s", self.key_note)
        self._key_checked = True

    # ---- the lease --------------------------------------------------------------------

    def _take_lease(self) -> str:
        """'' when this process holds the lease now, else who does. A lease held by a
        process that died is waited out (the sequencer's clock: ``now_ms`` here)."""
        return self.books.head.take_lease(
            LEASE, self.holder, LEASE_MS, now=now_ms(), free_when_gone=False
        )

    def lease(self) -> str:
        """Take the lease (a step that must not run beside a round: ``ledger new-log``):
        '' when this process holds it now, else who does."""
        with self._lock:
            return self._take_lease()

    def release(self) -> None:
        """Give the lease up (a process that stops), so another takes over at once."""
        self.books.head.release_lease(LEASE, self.holder)

    def __enter__(self) -> Sequencer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # ---- rounds -----------------------------------------------------------------------

    def drain(self, *, checkpoint: bool = False, rounds: int = 1000) -> RoundReport:
        """Rounds until nothing more is queued that can be logged now (or another process
        sequences); ``checkpoint``: sign one at the end whatever is due."""
        total = RoundReport()
        for number in range(rounds):
            last = self.run(checkpoint=False)
            total.add(last)
            if last.busy or not last.more:
                break
            if number == rounds - 1:
                total.notes.append(f"stopped after {rounds} rounds: more is queued")
        if checkpoint and not total.busy:
            total.add(self.run(checkpoint=True))
        return total

    def run(self, *, checkpoint: bool = False, limit: int | None = None) -> RoundReport:
        """One round (see the module's text), reading some ``limit`` queued entries (by
        default ``ROUND_ENTRIES``)."""
        with self._lock:
            report = RoundReport()
            quiet = None if checkpoint else self._quiet()
            if quiet is not None:
                report.size = quiet.size
                return report
            holder = self._take_lease()
            if holder:
                report.busy = f"{holder} sequences the ledger"
                tree = self.tree()
                report.size = tree.size if tree is not None else 0
                return report
            self._guard(self.start())
            return self._round(report, checkpoint, ROUND_ENTRIES if limit is None else limit)

    def _guard(self, state: TreeState) -> None:
        """Refuse the round (ForkError) when the ledger is stopped, or when the store's log
        is not an extension of what this process's key signed (``forks.py``): the last
        checkpoint recorded beside the key, the newest in the checkpoint folder. Whatever
        the round sequenced would be signed into a fork."""
        if self.signer is not None and self.signer.vkey() != state.key:
            self.signer, self.key_note, self._key_checked = None, "", False
            self._check_key(state)  # a new log was started (ledger new-log): another key
        why = refused(self.books)
        if why:
            raise ForkError(why)
        if self.signer is None:
            return
        signed_before = self._signed_before(state)
        if any(signed.size > state.size for signed in signed_before):
            state = self._head_after_records(state)
        for signed in signed_before:
            head = (state.size, state.root)
            if (signed.size, signed.root_hash) == head or (signed, head) in self._extended:
                continue
            why = fork_from(self.books, signed, state.size, state.root)
            if why:
                record_fork(self.books, why, self.holder, now_ms())
                raise ForkError(why)
            self._extended = {e for e in self._extended if e[1] == head} | {(signed, head)}

    def _head_after_records(self, state: TreeState) -> TreeState:
        """The head read again, after the records of what was signed: a process records a
        checkpoint only once the head it signs has moved, but its round may end after its
        lease ran out (a stall) and another process took over, having read the head just
        before. That head is older than the record, not a fork; the one read now is at least
        as new as the record (the same log: another log's head is left to the check)."""
        fresh = self._head_now()
        if fresh is None or (fresh.origin, fresh.key) != (state.origin, state.key):
            return state
        return fresh

    def _head_now(self) -> TreeState | None:
        """The head as it is, read before a fork is declared (which stops every sequencer):
        confirmed by a compare and set that leaves it as it is (on Cassandra a serial read:
        a read at ONE may meet a replica that missed the newest head); a head that moves at
        each read is another process's round (a store error: the round is tried again)."""
        for _attempt in range(3):
            text = self.books.head.text(TREE)
            if text is None or self.books.head.turn(TREE, text, text):
                return None if text is None else TreeState.decode(text)
        raise StoreError("the ledger's head moved at each read: another process sequences it")

    def _signed_before(self, state: TreeState) -> list[Checkpoint]:
        """The checkpoints this log's key signed that the store cannot take back: the one
        recorded beside the key, and the newest of the log's copies in the checkpoint
        folder (a copy that does not open with the key is left to ledger verify)."""
        assert self.signer is not None
        verifier = self.signer.verifier()
        found = [c for c in [last_signed(key_path(self.settings), verifier)] if c is not None]
        top = checkpoint_dir(self.settings)
        path = newest_copy(log_folder(Path(top), state.origin)) if top else None
        if path is not None:
            try:
                copy = open_checkpoint(path.read_text(encoding="utf-8"), [verifier], path.name)
            except (OSError, ValueError, IntegrityError):
                return found
            if copy.origin == state.origin:
                found.append(copy)
        return found

    def _round(self, report: RoundReport, checkpoint: bool, limit: int) -> RoundReport:
        books = self.books
        text = books.head.text(TREE)
        assert text is not None  # start() made it
        state = TreeState.decode(text)
        frontier = state.frontier_of()
        nodes: list[tuple[int, int, bytes]] = []
        leaves: list[bytes] = []
        latest: dict[str, Subject] = {}
        adopted_texts: dict[str, str] = {}
        for logged in books.entries(start=state.size):  # 2. past the head
            adopted = _checked(logged.idx, logged.text, logged.leaf)
            nodes += frontier.append(logged.leaf)
            leaves.append(logged.leaf)
            latest[adopted.subject] = subject_row(adopted, logged.idx)
            adopted_texts[adopted.subject] = logged.text
            report.adopted += 1
        now = now_ms()
        now_slot = now // 60_000
        first = state.queue_from
        if now - self._last_full_pass >= FULL_PASS_MS:  # writers whose clocks run behind
            self._last_full_pass = now
            whole = self._first_slot()
            first = min(first, whole) if whole is not None else first
        window = read_window(books, first, now_slot + 1, limit)  # 3. the queue
        report.more = window.cut
        plan = self._plan(window, latest, adopted_texts, now, report)
        to_log, done, unfinished = plan.to_log, plan.done, plan.unfinished
        last_read = window.last_read
        new_state = state
        note: str | None = None

        def write() -> bool:  # 4. the entries, nodes, subjects; the head
            nonlocal nodes, new_state, note
            for item in to_log:  # 4. the entries
                idx = frontier.size
                entry_text = item.encode()
                leaf = leaf_hash(entry_text.encode("utf-8"))
                there = books.write_entry(idx, entry_text, leaf)
                if there is not None and (there.text, there.leaf) != (entry_text, leaf):
                    report.busy = "another process wrote the log meanwhile"
                    report.size = state.size
                    return False  # what was written is taken over by the next round
                nodes += frontier.append(leaf)
                leaves.append(leaf)
                latest[item.subject] = subject_row(item, idx)
                report.logged += 1
            tiled = grow_tiles(books, state, leaves, nodes)
            books.put_subjects(latest.values())
            resume = min(
                unfinished | {now_slot - BEHIND_SLOTS, last_read + 1 if report.more else now_slot}
            )
            grown = state.grown(frontier)
            new_state = dataclasses.replace(grown, queue_from=resume, tiled=tiled)
            new_state, note = self._maybe_checkpoint(state, new_state, now, checkpoint)
            if _only_trails(state, new_state):
                new_state = state
            new_text = new_state.encode()
            moved = new_text == text or books.head.turn(TREE, text, new_text)
            if (
                not moved and books.head.text(TREE) != new_text
            ):  # not our own write, answered as failed
                report.busy = "another process moved the ledger's head meanwhile"
                report.size = state.size
                return False
            return True

        with books.grouped():  # one commit on the embedded store
            if not write():
                return report
        report.size = new_state.size
        if note is not None:  # 5. after the head moved
            report.checkpoint = new_state.size
            self._record(new_state, report)
        elif not self._recorded:  # a process's first round: what one that stopped left out
            self._record(state, report)
        with books.grouped():
            for queued in done:
                books.unqueue(queued.slot, queued.subject, queued.entry_key)
        if self.key_note and self.key_note not in report.notes:
            report.notes.append(self.key_note)
        return report

    def _plan(
        self,
        window: Window,
        latest: dict[str, Subject],
        adopted_texts: dict[str, str],
        now: int,
        report: RoundReport,
    ) -> _Plan:
        """What a round does with each queued entry it read: log it, drop it (repeated,
        damaged, never made) or leave it queued (its change is still being made); in the
        order made (a subject's entries, and across subjects), each subject's entries after
        one that waits waiting with it."""
        pending = window.pending
        plan = _Plan()
        last_of = {subject: max(q.entry_key for q in items) for subject, items in pending.items()}
        again = _made_again(pending)
        everything = sorted((q for items in pending.values() for q in items), key=_made)
        current: dict[str, Subject | None] = {}
        taken = self._taken(pending, adopted_texts, current)
        waiting: set[str] = set()
        later = Later(self.books, window, lambda: now_ms())
        for queued in everything:
            subject, entry = queued.subject, queued.entry
            if subject in waiting:
                plan.unfinished.add(queued.slot)
                continue
            if (subject, queued.entry_key) in taken:
                report.repeated += 1  # logged (or dropped) by a round that stopped
                plan.done.append(queued)
                continue
            if entry is None:
                report.damaged += 1
                plan.done.append(queued)
                continue
            if subject not in current:
                current[subject] = latest.get(subject) or self.books.subject(subject)
            last = current[subject]
            if last is not None and _same_state(last, entry):
                report.repeated += 1
                plan.done.append(queued)
                continue
            if (subject, queued.entry_key) in again:
                report.repeated += 1  # the next entry stands for it (and waits, if need be)
                plan.done.append(queued)
                continue
            if queued.entry_key == last_of[subject] and not self._agrees(entry):
                logged = adopted_texts.get(subject) or self._logged_text(last)
                verdict = _unborne(queued, entry, later, window.cut, now, logged)
                if verdict == "wait":
                    report.waiting += 1
                    plan.unfinished.add(queued.slot)
                    waiting.add(subject)
                    continue
                if verdict != "log":
                    setattr(report, verdict, getattr(report, verdict) + 1)
                    plan.done.append(queued)
                    continue
            plan.to_log.append(entry)
            plan.done.append(queued)
            current[subject] = subject_row(entry, -1)
        return plan

    def _logged_text(self, last: Subject | None) -> str | None:
        """The text of the log's entry a subject's row names (None: none, or one this round
        is about to log)."""
        if last is None or last.idx < 0:
            return None
        logged = self.books.entry(last.idx)
        return logged.text if logged is not None else None

    def _record(self, state: TreeState, report: RoundReport) -> None:
        """The head's checkpoint into the key's record of what it signed, the checkpoints
        table and the checkpoint folder (again, as it is, when they have it)."""
        if state.checkpoint and self.signer is not None:
            verifier = self.signer.verifier()
            opened = open_checkpoint(state.checkpoint, [verifier], "the ledger's checkpoint")
            remember_signed(key_path(self.settings), state.checkpoint, opened, verifier)
        if state.checkpoint:
            self.books.add_checkpoint(state.checkpoint_size, state.checkpoint, state.checkpoint_at)
            if checkpoint_dir(self.settings):
                folder = log_folder(Path(checkpoint_dir(self.settings)), state.origin)
                not_copied = self._fork_from_folder(folder, state)
                if not_copied:
                    log.error("ledger: %s", not_copied)
                    report.notes.append(not_copied)
                else:
                    keep_copy(folder, state.checkpoint, state.checkpoint_size, state.key)
        if state.checkpoint and self.signer is not None and self.witnessing.witnesses:
            self._witness(state, report)
        self._recorded = True

    def _witness(self, state: TreeState, report: RoundReport) -> None:
        """The head's checkpoint to the witnesses (``witnesses.py``); their cosignatures
        into the head (when it has not moved meanwhile: the next checkpoint is sent then)
        and the checkpoints table. A witness's refusal stops the ledger (``forks.py``)."""
        outcome = self.witnessing.cosign(state.checkpoint, TileReader(self.books, state).node)
        for problem in outcome.problems:
            log.warning("ledger: %s", problem)
            report.notes.append(problem)
        if outcome.lines:
            cosigned = add_lines(state.checkpoint, outcome.lines)
            text = self.books.head.text(TREE)
            if text is not None and TreeState.decode(text).checkpoint == state.checkpoint:
                moved = dataclasses.replace(TreeState.decode(text), checkpoint=cosigned)
                if self.books.head.turn(TREE, text, moved.encode()):
                    self.books.add_checkpoint(state.checkpoint_size, cosigned, state.checkpoint_at)
        refusals = list(outcome.refused)
        if outcome.ahead:
            now = self._head_now()
            size = now.size if now is not None and now.origin == state.origin else 0
            refusals += [
                ahead_refusal(name, cosigned, state.origin, state.checkpoint_size)
                for name, cosigned in outcome.ahead.items()
                if cosigned > size
            ]
        if refusals:
            why = (
                "; ".join(refusals)
                + ". Nothing more is signed, the ledger stops. To start a new log from the "
                f"store as it is: {NEW_LOG_STEP}"
            )
            log.error("ledger: %s", why)
            report.notes.append(why)
            record_fork(self.books, why, self.holder, now_ms())

    def _fork_from_folder(self, folder: Path, state: TreeState) -> str:
        """Why the head's checkpoint must not go to the checkpoint folder ('' when it may): the
        log is not an extension of the newest checkpoint there (the store was put back or
        rewritten). The folder then keeps the last checkpoint of the true log, and ledger
        verify names the difference."""
        path = newest_copy(folder)
        if path is None:
            return ""
        refused = (
            f"the log is not an extension of the checkpoint folder's newest checkpoint "
            f"({path.name}): the store was put back or its log rewritten; the folder "
            f"keeps it and gets no new checkpoint (run imixs-archive ledger verify)"
        )
        verifiers = [Verifier.from_vkey(state.key)]
        ours = open_checkpoint(state.checkpoint, verifiers, "the ledger's checkpoint")
        try:
            text = path.read_text(encoding="utf-8")
            theirs = open_checkpoint(text, verifiers, path.name)
        except (OSError, ValueError, IntegrityError):
            return refused  # another key's, unreadable or changed: not this log's
        # the folder's may be the newer: another process's round, recorded after this one
        # read the head (a round that ended after its lease ran out); the same log then
        old, new = sorted((theirs, ours), key=lambda checkpoint: checkpoint.size)
        try:
            proof = consistency_proof(old.size, new.size, tile_reader(self.books).node)
            verify_consistency(old.size, new.size, old.root_hash, new.root_hash, proof)
        except (ProofError, IntegrityError):  # IntegrityError: past the store's head
            return refused
        return ""

    def _quiet(self) -> TreeState | None:
        """The head when a round has nothing to write now (read without the lease: reads
        only): this process's first round and the whole queue's pass are done, nothing is past
        the head or queued, no checkpoint can be due, the tiles cover the log and the head
        does not trail the queue's window by ``HEAD_SLACK_SLOTS``. An idle ``serve`` then
        writes nothing."""
        now = now_ms()
        if not self._recorded or now - self._last_full_pass >= FULL_PASS_MS:
            return None
        state = self.tree()
        if state is None:
            return None
        now_slot = now // 60_000
        if now_slot - BEHIND_SLOTS - state.queue_from >= HEAD_SLACK_SLOTS:
            return None
        if self.signer is not None and state.size != state.checkpoint_size:
            return None  # entries not signed yet: a checkpoint may be due
        if state.tiled < state.size:
            return None  # an older log's tiles still to derive (``tiles.py``)
        if next(iter(self.books.entries(start=state.size)), None) is not None:
            return None
        window = read_window(self.books, state.queue_from, now_slot + 1, 1)
        return state if not window.pending and not window.cut else None

    def _maybe_checkpoint(
        self, old: TreeState, new: TreeState, now: int, wanted: bool
    ) -> tuple[TreeState, str | None]:
        if self.signer is None:
            return new, None
        signed = bool(old.checkpoint)
        grown = new.size - old.checkpoint_size if signed else new.size
        seconds = self.settings.ledger_checkpoint_seconds * 1000
        due = (
            grown >= self.settings.ledger_checkpoint_entries
            or (grown > 0 and now - old.checkpoint_at >= seconds)
            or (not signed and new.size > 0)
        )
        if not (due or (wanted and (grown > 0 or not signed))):
            return new, None
        note = sign_checkpoint(self.signer, new.origin, new.size, new.root)
        return (
            dataclasses.replace(new, checkpoint=note, checkpoint_size=new.size, checkpoint_at=now),
            note,
        )

    def _taken(
        self,
        pending: dict[str, list[Queued]],
        adopted_texts: dict[str, str],
        current: dict[str, Subject | None],
    ) -> set[tuple[str, str]]:
        """(subject, key) of queued entries a round took already: it logged them (or
        dropped them) and stopped before their queue rows were deleted, or another
        sequencer's round is under way. A subject's entries are taken in the order made,
        so when the log ends the subject with one of its queued entries (the same text),
        that one and those made before it were all taken. A subject with one queued entry
        needs no look: taken, it repeats its subject's last state. (Comparing states alone,
        the first of several, a store and the deletion after it, would be logged again.)
        ``current``: the subjects' rows read here, for the round."""
        taken: set[tuple[str, str]] = set()
        for subject, items in pending.items():
            if len(items) < 2:
                continue
            text = adopted_texts.get(subject)
            if text is None:
                row = current[subject] = self.books.subject(subject)
                logged = self.books.entry(row.idx) if row is not None else None
                text = logged.text if logged is not None else None
            if text is None:
                continue
            made = sorted(items, key=lambda q: q.entry_key)
            last = [q.entry_key for q in made if q.entry is not None and q.entry.encode() == text]
            if last:
                taken |= {(subject, q.entry_key) for q in made if q.entry_key <= last[-1]}
        return taken

    def _agrees(self, entry: Entry) -> bool:
        """Whether the store shows the change an entry records (made, not only begun)."""
        if entry.kind in (STORED, FOUND):
            return self.archive.exists(entry.target)
        if entry.kind == DELETED:
            return not self.archive.exists(entry.target)
        held = self.archive.holds.has(entry.target, entry.case)
        return held if entry.kind == HOLD_PLACED else not held


@dataclass
class _Plan:
    """What a round logs, which queue rows it is done with, and the minutes it leaves
    unfinished (entries that wait)."""

    to_log: list[Entry] = field(default_factory=list)
    done: list[Queued] = field(default_factory=list)
    unfinished: set[int] = field(default_factory=set)


def _unborne(
    queued: Queued, entry: Entry, later: Later, cut: bool, now: int, logged: str | None
) -> str:
    """What becomes of a subject's last entry read that the store does not bear out:
    'wait' (its change may still be under way), 'abandoned' (dropped: it never happened),
    'repeated' (dropped: a later entry stands for it, or a round that stopped logged it
    and those after it), or 'log' (a later entry, queued beyond what the round read,
    explains why the store no longer shows it: ``queue_window.py``)."""
    old = now - entry.at >= SETTLE_MS
    following = later.after(queued) if cut or old else []
    if not following:
        return "abandoned" if old else "wait"
    if logged is not None and any(
        q.entry is not None and q.entry.encode() == logged for q in following
    ):
        return "repeated"
    upcoming = following[0].entry
    assert upcoming is not None  # Later leaves damaged rows out
    if upcoming.kind == entry.kind and state_of(upcoming) == state_of(entry):
        return "repeated"  # as _made_again: the next one stands for it
    return "log"


def _made_again(pending: dict[str, list[Queued]]) -> set[tuple[str, str]]:
    """(subject, key) of the queued entries whose subject's next entry records the same
    change again (the same kind, leaving the same state). Only the last of such a run is
    taken: it is checked against the store when it is its subject's last. Else a store that
    died before its row and died again when made again would log the first entry, though
    the snapshot never came, and ``ledger verify`` would name it removed around the
    archive (``tests/ledger/test_kills.py``)."""
    found: set[tuple[str, str]] = set()
    for subject, items in pending.items():
        made = sorted(
            ((q.entry_key, q.entry) for q in items if q.entry is not None), key=lambda m: m[0]
        )
        for (key, entry), (_next_key, following) in pairwise(made):
            if entry.kind == following.kind and state_of(entry) == state_of(following):
                found.add((subject, key))
    return found


def _made(queued: Queued) -> tuple[str, str]:
    """The order entries were made in: their time (the key starts with it), then subject."""
    return queued.entry_key, queued.subject


def _checked(idx: int, text: str, leaf: bytes) -> Entry:
    """A stored log entry, checked against its leaf hash."""
    if leaf_hash(text.encode("utf-8")) != leaf:
        raise IntegrityError(f"ledger entry {idx} does not match its hash")
    try:
        return Entry.decode(text)
    except ValueError as exc:
        raise IntegrityError(f"ledger entry {idx} is not an entry: {exc}") from None


def _only_trails(old: TreeState, new: TreeState) -> bool:
    """Whether ``new`` only moves ``old``'s ``queue_from`` forward, by less than
    ``HEAD_SLACK_SLOTS``: a head not worth a write (the next round reads a few empty
    minutes more)."""
    moved = new.queue_from - old.queue_from
    return (
        0 < moved < HEAD_SLACK_SLOTS and dataclasses.replace(new, queue_from=old.queue_from) == old
    )
