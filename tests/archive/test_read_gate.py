"""Loads of large snapshots share a memory budget: one waits while others hold it, and the
budget comes back when the documents are gone."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from imixs_archive.archive import read_gate
from imixs_archive.archive.read_gate import WEIGHT, ReadGate
from imixs_archive.archive.snapshots import Archive
from support.snapshots import make_snapshot

TEXT = "t" * (3 * 2**20)


def test_a_large_load_waits_for_memory_and_gets_it_back(archive: Archive) -> None:
    doc = make_snapshot(0, note=TEXT)
    archive.store(doc)
    snapshot = doc["$uniqueid"][0]
    archive.read_gate = ReadGate(limit=int(len(TEXT) * WEIGHT * 1.5))
    first = archive.load(snapshot)
    assert archive.read_gate.held >= len(TEXT) * WEIGHT
    loaded: list[object] = []
    waiting = threading.Thread(target=lambda: loaded.append(archive.load(snapshot)))
    waiting.start()
    time.sleep(0.3)
    assert not loaded  # the budget is spent: it waits
    del first
    gc.collect()
    waiting.join(60)
    assert loaded and loaded[0] == doc
    loaded.clear()
    gc.collect()
    assert archive.read_gate.held == 0


def test_small_loads_take_nothing(archive: Archive) -> None:
    doc = make_snapshot(0)
    archive.store(doc)
    archive.read_gate = ReadGate(limit=1)
    kept = [archive.load(doc["$uniqueid"][0]) for _ in range(5)]
    assert len(kept) == 5 and archive.read_gate.held == 0


def test_outside_a_request_a_load_never_waits_for_itself(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller holding one large document while loading another goes ahead after a while."""
    monkeypatch.setattr(read_gate, "UNBUDGETED_WAIT", 0.2)
    doc = make_snapshot(0, note=TEXT)
    archive.store(doc)
    archive.read_gate = ReadGate(limit=int(len(TEXT) * WEIGHT * 1.5))
    first = archive.load(doc["$uniqueid"][0])
    second = archive.load(doc["$uniqueid"][0])
    assert first == second
