"""The ledger's index of last entries (``archive_ledger_subjects``) as ``ledger verify``
checks it: as of the tree size it verifies, while writers go on logging.

A pass over the log checks the log up to one size, its target. The index moves on
meanwhile: a snapshot stored or deleted while the pass runs gets an entry past the target,
and its row names that entry. Such a row is no finding (the next verify checks it against
its entry); a row that contradicts the log within the target is one.

The pass meets each subject's entries in the log and checks its row then (``verify.py``):
the row names the entry (matched), lags behind it (put right at the end), or names an
entry past the target (the subject changed since). What the pass cannot meet are rows of
subjects it never sees, written around the archive: a row for a snapshot stored without an
entry hides it from the check of the store. Those are counted: the index is read once when
the pass begins (:func:`index_at_start`: the rows below the target, and the subjects whose
row was already past it), and at the end every row below the target must be one the pass
matched or put right, or one that moved past the target since (:func:`strays_left`). When
the count does not come out, or the pass met too many subjects that changed to count them,
every row is checked against the entry it names (:func:`index_problems`); rows that were
past the target at the start are always checked so.
"""

from __future__ import annotations

from collections.abc import Iterable

from imixs_archive.ledger.books import LedgerBooks, Subject
from imixs_archive.ledger.entries import Entry

KEPT = 5000
"""Subjects that changed while the pass ran (or were past its target at its start) that a
saved pass keeps by name; past that it checks every row at the end instead."""


def index_at_start(books: LedgerBooks, target: int) -> tuple[int, list[str] | None]:
    """The rows of the index naming an entry below ``target``, and the subjects whose row
    names one past it (None: more than ``KEPT``)."""
    below = 0
    ahead: list[str] | None = []
    for row in books.subjects():
        if row.idx < target:
            below += 1
        elif ahead is not None:
            ahead.append(row.subject)
            if len(ahead) > KEPT:
                ahead = None
    return below, ahead


def strays_left(
    below: int, matched: int, fixed: int, changed: Iterable[str], ahead: Iterable[str]
) -> int:
    """Rows below the target at the start that the pass did not account for: neither
    matched, nor put right (``fixed``: rows that lagged behind), nor moved past the target
    since (``changed``, less those already past it at the start). Not 0: check every row."""
    moved = set(changed) - set(ahead)
    return below - matched - fixed - len(moved)


def index_problems(books: LedgerBooks, rows: Iterable[Subject]) -> list[str]:
    """A finding for each row that names an entry the log does not have, or one about
    another subject."""
    problems = []
    for row in rows:
        logged = books.entry(row.idx)
        try:
            entry = Entry.decode(logged.text) if logged is not None else None
        except ValueError:
            entry = None
        if entry is None or entry.subject != row.subject:
            problems.append(
                f"the ledger's index names entry {row.idx} for {row.subject}, which the log "
                "does not bear out (the index was changed)"
            )
    return problems


def rows_of(books: LedgerBooks, subjects: Iterable[str]) -> Iterable[Subject]:
    """The index rows of these subjects (those there)."""
    for subject in subjects:
        row = books.subject(subject)
        if row is not None:
            yield row
