"""The newest snapshot of a process instance other than the one being stored or deleted,
so that the day it lies on can be stamped (``days.stamp_day``).

Figures kept for a finished month or day (``analytics/month_cache.py``) hold while the
stamps of its days hold. The lead time of an instance is filed under the day of its newest
snapshot and spans from its oldest: a snapshot stored on another day (the workitem
archived a month later, an older snapshot arriving late) or a delete changes that sample
although nothing was stored on its day. Stamping the day of the instance's newest other
snapshot as well makes the kept figures of that day and its month counted again.

Known without a read while this process stored or looked up the instance lately (bounded:
the oldest go first); else one read of the instance's index partition, newest first. A
snapshot another process stores of the same instance at the same moment can leave a kept
month stale, which the reconcile (``stats --reconcile``) repairs; so does a read the store
refuses (on Cassandra: more tombstones than a read may walk), logged and skipped.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import OrderedDict

from imixs_archive.document.conventions import is_snapshot_id, snapshot_order, snapshot_time
from imixs_archive.errors import StoreError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import SNAPSHOTS_BY_UNIQUEID

log = logging.getLogger(__name__)
READ = 4
"""Rows read, newest first: the newest other than the one at hand is among them."""


class NewestSnapshots:
    def __init__(self, capacity: int = 100_000) -> None:
        self._by: OrderedDict[str, str] = OrderedDict()
        self._capacity = capacity

    def day_of_other(self, backend: Backend, origin: str, snapshot_id: str) -> dt.date | None:
        """The UTC day of the instance's newest snapshot other than ``snapshot_id``; None
        when it has no other (or it could not be read)."""
        other = self._by.get(origin)
        if other is None or other == snapshot_id:
            other = _read_newest_other(backend, origin, snapshot_id)
        return snapshot_time(other).date() if other is not None else None

    def known(self, origin: str) -> str | None:
        """The newest snapshot of ``origin`` this process stored or met lately, if any."""
        return self._by.get(origin)

    def note(self, origin: str, snapshot_id: str) -> None:
        """``snapshot_id`` of ``origin`` is stored."""
        known = self._by.get(origin)
        if known is None or snapshot_order(snapshot_id) > snapshot_order(known):
            self._by[origin] = snapshot_id
        self._by.move_to_end(origin)
        while len(self._by) > self._capacity:
            self._by.popitem(last=False)

    def forget(self, origin: str, snapshot_id: str) -> None:
        """``snapshot_id`` of ``origin`` is deleted."""
        if self._by.get(origin) == snapshot_id:
            del self._by[origin]


def _read_newest_other(backend: Backend, origin: str, snapshot_id: str) -> str | None:
    try:
        rows = backend.scan(
            SNAPSHOTS_BY_UNIQUEID,
            {"uniqueid": origin},
            limit=READ,
            columns=["snapshot"],
            descending=True,
        )
        others = [
            r["snapshot"]
            for r in rows
            if r["snapshot"] != snapshot_id and is_snapshot_id(r["snapshot"])
        ]
    except StoreError as exc:
        log.warning("instance %s: its newest snapshot unread (%s): no day stamped", origin, exc)
        return None
    return max(others, key=snapshot_order) if others else None
