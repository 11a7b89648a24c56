"""What the reports of the jobs count, written once: one report's counts added to another's
(the parts of a run, the runs a run goes on from), and a failure counted and named."""

from __future__ import annotations

from dataclasses import fields, is_dataclass

from imixs_archive.errors import IntegrityError


def add_up(into: object, other: object) -> None:
    """Add ``other``'s counts to ``into``, a dataclass of the same kind: whole numbers are
    added, lists extended, sets joined; the other fields (names, flags) stay as they are."""
    assert is_dataclass(into) and type(other) is type(into)
    for f in fields(into):
        mine, theirs = getattr(into, f.name), getattr(other, f.name)
        if isinstance(mine, list):
            mine.extend(theirs)
        elif isinstance(mine, set):
            mine.update(theirs)
        elif isinstance(mine, int) and not isinstance(mine, bool):
            setattr(into, f.name, mine + theirs)


class Failures:
    """The mixin of a report that counts what failed (``failed``) and names each failure
    (``failures``: where, and why)."""

    failed: int
    failures: list[str]

    def fail(self, where: str, error: object) -> None:
        self.failed += 1
        self.failures.append(f"{where}: {error}")


class CopyFailures(Failures):
    """A report of snapshots copied out of the store (a backup, an export): of the failed,
    ``corrupt`` counts the stored bytes that did not check out (an ``IntegrityError``)."""

    corrupt: int

    def fail(self, where: str, error: object) -> None:
        super().fail(where, error)
        self.corrupt += isinstance(error, IntegrityError)
