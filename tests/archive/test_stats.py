import random

import pytest

import imixs_archive.archive.stats as stats_module
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.stats import collect_stats
from support.snapshots import make_snapshot

PDF = random.Random(1).randbytes(700_000)
TXT = random.Random(2).randbytes(100_000)


def test_counts_match_what_was_archived(archive: Archive) -> None:
    archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    archive.store(make_snapshot(1, files={"a.pdf": PDF, "b.txt": TXT}))
    archive.store(make_snapshot(0, origin="11111111-2222-4333-8444-555555555555"))
    stats = collect_stats(archive.backend)
    assert stats.snapshots == 3
    assert stats.instances == 2
    assert stats.files == 2
    assert stats.logical_bytes == 2 * len(PDF) + len(TXT)
    assert stats.file_bytes == len(PDF) + len(TXT)
    assert stats.stored_bytes == len(PDF) + len(TXT)
    assert stats.dedup_ratio == (2 * len(PDF) + len(TXT)) / (len(PDF) + len(TXT))
    assert "by_day" not in stats.to_json()  # the analytics count days (services/statistics)


def test_empty_archive(archive: Archive) -> None:
    stats = collect_stats(archive.backend)
    assert stats.to_json()["snapshots"] == 0 and stats.dedup_ratio == 1.0


def test_counts_alike_when_few_sizes_are_kept(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The census keeps the sizes of a bounded number of files (memory flat at any
    size); the others are looked up, and the sums are the same."""
    other = "11111111-2222-4333-8444-555555555555"
    archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    archive.store(make_snapshot(0, origin=other, files={"b.txt": TXT, "c.bin": TXT[:999]}))
    archive.store(make_snapshot(1, files={"a.pdf": PDF, "b.txt": TXT}))
    archive.store(make_snapshot(1, origin=other, files={"c.bin": TXT[:999]}))
    whole = collect_stats(archive.backend)
    monkeypatch.setattr(stats_module, "SIZES_KEPT", 1)
    assert collect_stats(archive.backend) == whole
    assert whole.logical_bytes == 2 * len(PDF) + 2 * len(TXT) + 2 * 999
    assert whole.file_bytes == len(PDF) + len(TXT) + 999 and whole.files == 3
