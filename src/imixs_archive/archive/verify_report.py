"""What a ``verify`` (or a slice of the scrub) found: problems, warnings, counts, and the
tables that disagree with what they are derived from or that the store's own check of its
file found damaged, each with a count and a few examples (``verify.py`` checks, this
module keeps the score; it is saved with a stopped run and restored to go on)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from imixs_archive.archive.rechecks import HELD, Again, Rechecks
from imixs_archive.storage.base import Position

LISTED = 1000
"""Problems (and warnings) a report lists; it counts the rest."""
EXAMPLES = 5
"""Problems listed per table that disagrees or is damaged; the rest are counted."""


@dataclass
class VerifyReport:
    pieces: int = 0
    files: int = 0
    snapshots: int = 0
    unverified: int = 0
    """Snapshot rows found without a digest (the Java service's, or an earlier version's):
    parsed only, then sealed (``sealed`` of them; the others changed meanwhile)."""
    sealed: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unlisted_problems: int = 0
    """Problems found beyond the first ``LISTED`` (counted, not kept)."""
    unlisted_warnings: int = 0
    reclaimable_bytes: int = 0
    """Bytes of pieces no file uses plus those only unused files use (``gc`` frees them;
    ``filestore/gc.py``: :func:`unused_now`, as ``stats`` and ``gc`` count them)."""
    unused_files: int = 0
    """Of the files checked: those no snapshot uses."""
    unused_pieces: int = 0
    """Of the pieces checked: those only unused files use, or no file uses."""
    loose_pieces: int = 0
    """Pieces no file refers to, met in the pass over the pieces."""
    bytes_read: int = 0
    """Bytes of pieces and snapshot rows read (the scrub paces itself by them)."""
    factless: int = 0
    """Snapshots without a fact yet (the Java service's, or a writer stopped between the
    row and the fact): counted when their day is (``facts.py``)."""
    disagreeing: dict[str, int] = field(default_factory=dict)
    """Index and derived tables whose rows disagree with what they are derived from: the
    table's name and how many rows (``stats --reconcile`` rebuilds them)."""
    damaged: dict[str, int] = field(default_factory=dict)
    """Tables the store's own check of its file found damaged (below the rows: SQLite's
    pages), or that a read failed in for that damage: the table's name (``the file`` for
    what belongs to none) and how many problems."""
    file_checked: bool = False
    """The store's whole file was checked in this run (its findings are among these)."""
    where: tuple[str, Position] | None = field(default=None, repr=False)
    """The walk and the partition being checked (set by ``verify.walk_range``)."""
    places: list[tuple[str, Position]] | None = field(default=None, repr=False)
    """Where each listed problem was found, when asked for (the scrub: its findings)."""
    held: Rechecks | None = field(default=None, repr=False)
    """Findings held to be read again before they are reported (``rechecks.py``)."""

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unlisted_problems

    @property
    def problem_count(self) -> int:
        return len(self.problems) + self.unlisted_problems

    def problem(self, text: str) -> None:
        if len(self.problems) >= LISTED:
            self.unlisted_problems += 1
            return
        self.problems.append(text)
        if self.places is not None:
            self.places.append(self.where or ("", None))

    def disagrees(self, table: str, text: str) -> None:
        """A row of an index or derived table that disagrees with what it derives from."""
        self._counted(self.disagreeing, table, text)

    def damage(self, table: str, text: str) -> None:
        """Damage in the store's own file, in ``table`` (or ``the file``)."""
        self._counted(self.damaged, table, text)

    def _counted(self, tally: dict[str, int], table: str, text: str) -> None:
        tally[table] = tally.get(table, 0) + 1
        if tally[table] > EXAMPLES:
            self.unlisted_problems += 1
        else:
            self.problem(text if text.startswith(f"{table}:") else f"{table}: {text}")

    def suspect(self, table: str, again: Again) -> None:
        """Two tables disagreed: reported under ``table`` if ``again()`` (which reads them
        again) still says so once writes under way are over (``rechecks.py``)."""
        if self.held is None or not self.held.delay:
            self._confirm(table, self.where, again)
            return
        self.held.hold(table, self.where, again)
        if len(self.held) >= HELD:
            self.settle(wait=True)

    def settle(self, *, wait: bool = False) -> None:
        """Read the held findings whose time has come again (``wait``: all of them)."""
        if self.held is None:
            return
        for item in self.held.due(wait=wait):
            self._confirm(item.table, item.where, item.again)

    def _confirm(self, table: str, where: tuple[str, Position] | None, again: Again) -> None:
        text = again()
        if text is not None:
            current, self.where = self.where, where
            self.disagrees(table, text)
            self.where = current

    def warn(self, text: str) -> None:
        if len(self.warnings) >= LISTED:
            self.unlisted_warnings += 1
        else:
            self.warnings.append(text)

    def saved(self) -> dict[str, Any]:
        """The report as JSON, to go on with later (:meth:`restored`)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.repr}

    @classmethod
    def restored(cls, saved: dict[str, Any]) -> VerifyReport:
        names = {f.name for f in fields(cls) if f.repr}
        return cls(**{name: value for name, value in saved.items() if name in names})
