"""The collector's Bloom filter: never a wrong "not in it", few wrong "in it", memory a few
bytes per item, and past its limit "in it" for everything."""

from __future__ import annotations

import uuid

from imixs_archive.filestore.bloom import BloomFilter


def test_every_item_added_is_in_it_as_it_grows() -> None:
    ids = [str(uuid.uuid4()) for _ in range(50_000)]
    found = BloomFilter(capacity=1_000)  # six layers by the end
    for data_id in ids:
        found.add(data_id)
    assert all(data_id in found for data_id in ids)
    others = [str(uuid.uuid4()) for _ in range(20_000)]
    wrong = sum(other in found for other in others)
    assert wrong < 0.02 * len(others)
    assert found.count == len(ids) and found.nbytes < 3 * len(ids)  # a set: ~100 each


def test_two_filters_are_wrong_about_different_items() -> None:
    ids = [str(n) for n in range(2_000)]
    others = [f"other {n}" for n in range(20_000)]
    wrong = []
    for _ in range(2):
        found = BloomFilter(capacity=2_000, error=0.05)
        for item in ids:
            found.add(item)
        wrong.append({other for other in others if other in found})
    assert wrong[0] and wrong[0] != wrong[1]


def test_past_its_memory_it_answers_in_it_for_everything() -> None:
    found = BloomFilter(capacity=1_000, max_bytes=4_000)
    for n in range(10_000):
        found.add(str(n))
    assert found.saturated and found.nbytes == 0
    assert "never added" in found and str(9_999) in found
    assert 42 not in BloomFilter()  # not a string
