"""The sequencing ``serve`` runs every ``ARCHIVE_LEDGER_INTERVAL`` seconds, and what the
API, the Monitor and /metrics show of the ledger (:func:`ledger_status`). Safe in every
replica at once: one holds the lease and sequences, the others skip their round."""

from __future__ import annotations

import logging
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError, ConfigError, NotFoundError
from imixs_archive.ledger.forks import ForkError, refused
from imixs_archive.ledger.sequencer import RoundReport, Sequencer
from imixs_archive.ledger.tree import read_tree
from imixs_archive.ledger.verify import last_verify
from imixs_archive.periodic import Schedule
from imixs_archive.services.jobs import JobBusyError
from imixs_archive.timezones import now_ms

log = logging.getLogger(__name__)


class LedgerSchedule(Schedule[RoundReport]):
    """Sequences the ledger every ``interval`` seconds until :meth:`close`, which logs
    what is queued once more and gives the lease up. An error a round meets again is
    logged once."""

    name = "ledger"
    at_once = True

    def __init__(self, archive: Archive, settings: Settings) -> None:
        super().__init__(settings.ledger_interval)
        self.sequencer = Sequencer(archive, settings)
        self.last_round = 0

    def work(self) -> RoundReport:
        report = self.sequencer.drain(rounds=20)
        self.last_round = now_ms()
        if self.sequencer.signer is None:  # a replica without the key: one with it signs
            self.sequencer.release()
        if report.logged or report.checkpoint is not None:
            log.info(
                "ledger: %d entries logged, %d in the log%s",
                report.logged,
                report.size,
                f", checkpoint signed at {report.checkpoint}" if report.checkpoint else "",
            )
        return report

    def failed(self, exc: Exception) -> None:
        """A fork stops the ledger until a new log is started (an error); the store gone
        away is a warning, and the next round tries again."""
        if not isinstance(exc, ArchiveError):
            super().failed(exc)  # a fault of the code: logged with its trace
            return
        if str(exc) != self.last_error:
            if isinstance(exc, ForkError):
                log.error("ledger: %s", exc)
            else:
                log.warning("ledger: sequencing failed: %s", exc)
        self.last_error = str(exc)

    def close(self, timeout: float = 30.0) -> None:
        super().close(timeout)
        if self.interval > 0:
            try:
                self.run_once()
            except Exception as exc:
                self.failed(exc)
        try:
            self.sequencer.release()
        except ArchiveError as exc:
            log.warning("ledger: could not give up the lease: %s", exc)


def sign_now(sequencer: Sequencer) -> tuple[str, list[str]]:
    """Log what is queued and sign a checkpoint now (``ledger checkpoint``, ``POST
    /api/ledger/checkpoint``): the new checkpoint's note, and what the rounds noted.
    Never an older checkpoint passed off as the one asked for: JobBusyError while another
    process sequences, ConfigError where this process cannot sign, NotFoundError when the
    log is empty."""
    report = sequencer.drain(checkpoint=True)
    if report.busy:
        raise JobBusyError(
            f"no checkpoint signed: {report.busy}: try again shortly (a running serve signs "
            "every ARCHIVE_LEDGER_CHECKPOINT_ENTRIES entries or "
            "ARCHIVE_LEDGER_CHECKPOINT_SECONDS seconds; POST /api/ledger/checkpoint asks it now)"
        )
    if sequencer.signer is None:
        raise ConfigError(f"no checkpoint signed: {sequencer.key_note}")
    stopped = refused(sequencer.books)
    if stopped:  # a witness refused what was signed: the log forked
        raise ForkError(stopped)
    tree = sequencer.tree()
    if tree is None or not tree.checkpoint:
        raise NotFoundError("no checkpoint signed: nothing to sign")
    return tree.checkpoint, report.notes


def ledger_status(archive: Archive, schedule: LedgerSchedule | None) -> dict[str, Any]:
    """The ledger as the API and the Monitor show it: its size, origin and key, the last
    checkpoint, the last ledger verify, this process's last round."""
    sequencer = schedule.sequencer if schedule is not None else None
    tree = read_tree(archive.ledger)
    status: dict[str, Any] = {
        "started": tree is not None,
        "size": tree.size if tree is not None else 0,
        "origin": tree.origin if tree is not None else None,
        "public_key": tree.key if tree is not None else None,
        "checkpoint": tree.checkpoint or None if tree is not None else None,
        "checkpoint_size": tree.checkpoint_size if tree is not None else None,
        "checkpoint_at": tree.checkpoint_at or None if tree is not None else None,
        "last_verify": last_verify(archive),
        "stopped": refused(archive.ledger) or None,
    }
    if schedule is not None:
        status["signs_here"] = sequencer is not None and sequencer.can_sign(tree)
        status["key_note"] = sequencer.key_note if sequencer is not None else ""
        status["last_round"] = schedule.last_round or None
        status["last_error"] = schedule.last_error or None
    return status
