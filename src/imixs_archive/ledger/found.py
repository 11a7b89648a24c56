"""``ledger init``: log what the store already holds, as found.

An archive that existed before its ledger (or a keyspace the Java service filled) holds
snapshots and legal holds no entry logged. Each is logged once, as ``found`` at the time
of the pass, with the content digest it has now: from then on any change to it is seen.
What was done to it before cannot be (``docs/ledger.md``). Running it again logs only what
is still not logged, so an interrupted pass is completed by the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import IntegrityError
from imixs_archive.jsonable import Jsonable
from imixs_archive.ledger.books import BEFORE_LEDGER, Subject
from imixs_archive.ledger.entries import FOUND, HOLD_PLACED, STORED, Entry, hold_subject
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.timezones import epoch_ms

DRAIN_EVERY = 2000


@dataclass
class InitReport(Jsonable):
    snapshots: int = 0
    found: int = 0
    holds_found: int = 0
    size: int = 0
    problems: list[str] = field(default_factory=list)


def not_logged_as_present(
    archive: Archive, counted: Callable[[], None]
) -> Iterator[tuple[str, Subject | None]]:
    """Each stored snapshot whose last entry does not log it as present (none, or a
    deletion), with that entry; ``counted`` is called for every snapshot walked."""
    for snapshot_id in archive.index.iter_snapshot_ids():
        counted()
        row = archive.ledger.subject(snapshot_id)
        if row is None or row.kind not in (STORED, FOUND):
            yield snapshot_id, row


def init_ledger(
    archive: Archive, settings: Settings, progress: Callable[[int], None] | None = None
) -> InitReport:
    """Log every snapshot and legal hold the ledger does not know (see the module's text)."""
    with Sequencer(archive, settings) as sequencer:
        return _init(archive, sequencer, progress)


def _init(
    archive: Archive, sequencer: Sequencer, progress: Callable[[int], None] | None
) -> InitReport:
    sequencer.start()
    report = InitReport()

    def counted() -> None:
        report.snapshots += 1
        if progress is not None:
            progress(1)

    for snapshot_id, _row in not_logged_as_present(archive, counted):
        try:
            found = archive.log_found(snapshot_id)
        except IntegrityError as exc:
            report.problems.append(f"snapshot {snapshot_id}: not logged: {exc}")
            continue
        if found is not None:
            report.found += 1
            if report.found % DRAIN_EVERY == 0:
                sequencer.drain()
    for hold, case in archive.holds.logged_as():
        row = archive.ledger.subject(hold_subject(hold.uniqueid, case))
        if row is not None and row.kind == HOLD_PLACED:
            continue
        entry = Entry(
            HOLD_PLACED,
            hold.uniqueid,
            epoch_ms(hold.placed),
            hold.placed_by or archive.actor,
            reason=hold.reason,
            case=case,
        )
        archive.ledger.enqueue(entry)
        report.holds_found += 1
    report.size = sequencer.drain(checkpoint=True).size
    if not report.problems:
        archive.ledger.head.drop(BEFORE_LEDGER)
    return report
