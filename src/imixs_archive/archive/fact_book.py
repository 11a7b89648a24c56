"""The facts of each day's snapshots as the analytics read them (``Archive.facts``): one
day's facts, how they differ from their snapshots' XML, a missing fact counted again, a
day counted again by the whole count's rules. Over ``facts.py`` and ``derived_checks.py``.
"""

from __future__ import annotations

import datetime as dt
import logging

from imixs_archive.archive import snapshot_reads as reads
from imixs_archive.archive.days import stamp_day
from imixs_archive.archive.derived_checks import day_fact_problems
from imixs_archive.archive.facts import (
    EarliestComplete,
    Fact,
    day_facts,
    delete_fact,
    exact_fact,
    put_fact,
    repair_fact,
)
from imixs_archive.errors import StoreError
from imixs_archive.storage.base import Backend

log = logging.getLogger(__name__)


class FactBook:
    """The snapshots' facts of one archive."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def of_day(self, day: dt.date) -> dict[str, Fact]:
        """The facts of one UTC day's snapshots by id (``facts.py``): what day figures sum."""
        return day_facts(self._backend, day)

    def problems(self, day: dt.date) -> list[str]:
        """How the facts of one UTC day's snapshots differ from their XML (what ``verify``
        reports of them: ``derived_checks.py``); empty when they agree."""
        return day_fact_problems(self._backend, day)

    def repair(self, snapshot_id: str, day: dt.date) -> Fact | None:
        """The fact of a snapshot of ``day`` that has none, counted from its XML and
        written; None when the snapshot is not complete (being written or deleted)."""
        doc = reads.load_complete(self._backend, snapshot_id)
        if doc is None:
            return None
        keys = reads.snapshot_file_keys(self._backend, snapshot_id, doc)
        return repair_fact(self._backend, snapshot_id, doc, day, keys)

    def earliest_complete(self) -> EarliestComplete:
        """The earliest complete snapshot of each file and instance, remembered: one per
        reconcile."""
        return EarliestComplete(self._backend)

    def reconcile(self, day: dt.date, earliest: EarliestComplete | None = None) -> int:
        """Count the facts of one UTC day again from its snapshots' XML by the whole
        count's rules (``facts.exact_fact``), rewrite those that differ, drop those whose
        snapshot is gone, and stamp the day when anything changed. How many changed."""
        backend = self._backend
        earliest = earliest or self.earliest_complete()
        ids = reads.day_snapshot_ids(backend, day)
        facts = day_facts(backend, day)
        changed = 0
        for snapshot_id in ids:
            doc = reads.load_complete(backend, snapshot_id)
            if doc is None:
                continue  # being written or deleted: its writer finishes its fact
            keys = reads.snapshot_file_keys(backend, snapshot_id, doc)
            try:
                fact = exact_fact(backend, snapshot_id, doc, day, keys, earliest)
            except StoreError as exc:  # e.g. a partition of more tombstones than a read walks
                log.warning("reconcile: %s left as it is: %s", snapshot_id, exc)
                continue
            if facts.get(snapshot_id) != fact:
                put_fact(backend, day, snapshot_id, fact)
                changed += 1
        for snapshot_id in set(facts) - set(ids):
            delete_fact(backend, day, snapshot_id)
            changed += 1
        if changed:
            stamp_day(backend, day)
        return changed
