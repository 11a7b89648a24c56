"""The fork check (``ledger/forks.py``): a store that cannot answer is no fork."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.forks import fork_from
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tree import read_tree
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import ARCHIVE_LEDGER_TILES, Table
from imixs_archive.tlog.note import Checkpoint
from support.snapshots import make_snapshot


class _TilesUnreadable(DelegatingBackend):
    """A store whose reads of the tree's tiles fail for a moment (a node restarting)."""

    def scan(
        self, table: Table, partition: Mapping[str, Any] | None = None, **kw: Any
    ) -> Iterator[Row]:
        if table is ARCHIVE_LEDGER_TILES:
            raise StoreUnavailableError("the store is unavailable (test)")
        return super().scan(table, partition, **kw)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(
        {"ARCHIVE_DATA_DIR": str(tmp_path / "keys"), "ARCHIVE_LEDGER_ORIGIN": "example.com/a"}
    )


def test_a_store_that_cannot_answer_is_no_fork(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    """The check of the signed prefix meets an unavailable store: the error goes up (the
    round is tried again), it is not taken for a fork that would stop the ledger for good."""
    for step in range(3):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    signed = read_tree(archive.ledger)
    assert signed is not None
    for step in range(3, 6):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain()
    head = read_tree(archive.ledger)
    assert head is not None and head.size == 6
    checkpoint = Checkpoint(signed.origin, signed.size, signed.root)
    assert fork_from(archive.ledger, checkpoint, head.size, head.root) == ""
    unreadable = LedgerBooks(_TilesUnreadable(backend))
    with pytest.raises(StoreUnavailableError):
        fork_from(unreadable, checkpoint, head.size, head.root)
