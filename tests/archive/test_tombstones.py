"""On a real Cassandra node: an instance whose history holds more deleted snapshots than
the node lets one read walk (``tombstone_failure_threshold``) is still archived: its
history cleanup reads newest first and never walks the old tombstones.

The test node runs with a lowered threshold (``scripts/cassandra-node``: 1000), so a
thousand deletes stand in for the 100,000 of a production node."""

from __future__ import annotations

from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import StoreError
from imixs_archive.storage.model import SNAPSHOTS_BY_UNIQUEID
from support.snapshots import BASE_MILLIS, ORIGIN, make_snapshot

pytestmark = pytest.mark.cassandra


def _threshold(store: Any) -> int:
    session = store._session._session
    row = session.execute(
        "SELECT value FROM system_views.settings WHERE name = 'tombstone_failure_threshold'"
    ).one()
    return int(row[0])


def test_history_cleanup_never_walks_old_tombstones(
    cassandra_session_store: Any,
) -> None:
    store = cassandra_session_store
    store.truncate_all()
    threshold = _threshold(store)
    if threshold > 20_000:
        pytest.skip(f"the node's tombstone_failure_threshold is {threshold}: too many to write")
    # An instance archived for years with $snapshot.history = 1: its index partition holds
    # the one snapshot kept (archived a day ago) and, older, the rows of every snapshot
    # deleted by the cleanups before (tombstones, more than one read may walk).
    with Archive(store) as archive:
        kept = make_snapshot(0, modified=None, dollar_snapshot__history=1)
        kept["$uniqueid"] = [f"{ORIGIN}-{BASE_MILLIS - 86_400_000:013d}"]
        archive.store(kept)
    old = [
        f"{ORIGIN}-{BASE_MILLIS - 2 * 86_400_000 - n * 1000:013d}" for n in range(threshold + 50)
    ]
    rows = [{"uniqueid": ORIGIN, "snapshot": sid} for sid in old]
    store.put(SNAPSHOTS_BY_UNIQUEID, rows)
    for sid in old:
        store.delete(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": ORIGIN, "snapshot": sid})
    with pytest.raises(StoreError):  # a read that walks them fails: they are there
        list(store.scan(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": ORIGIN}))
    with Archive(store) as archive:
        for step in range(4):
            archive.store(
                make_snapshot(step, dollar_snapshot__history=1, files={"a.txt": b"%d" % step})
            )
        newest = make_snapshot(3)["$uniqueid"][0]
        assert [sid for sid in archive.index.iter_snapshot_ids()] == [newest]
        assert archive.load(newest)["subject"] == ["step 3"]
