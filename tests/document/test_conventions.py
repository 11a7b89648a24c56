"""Snapshot ids as the Java service accepts them, and numbers as Java reads them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from imixs_archive.document.conventions import (
    is_snapshot_id,
    item_integer,
    origin_id,
    snapshot_millis,
    snapshot_order,
)
from imixs_archive.document.model import Document, Long, TypedText


@pytest.mark.parametrize(
    ("snapshot_id", "origin", "millis"),
    [
        (
            "270e3a6d-a0e4-4875-89f1-3b418859abe5-1519000000000",
            "270e3a6d-a0e4-4875-89f1-3b418859abe5",
            1519000000000,
        ),
        ("156ea588638-ba4de2b-1519000000000", "156ea588638-ba4de2b", 1519000000000),
        ("14ad1d2e7ff-2f6e5fa5", "14ad1d2e7ff", 0),  # Java's old format, no millis suffix
        ("4832b09a-x", "4832b09a", 0),
        ("4832b09a-12", "4832b09a", 12),
    ],
)
def test_snapshot_ids_java_accepts(snapshot_id: str, origin: str, millis: int) -> None:
    assert is_snapshot_id(snapshot_id)
    assert origin_id(snapshot_id) == origin
    assert snapshot_millis(snapshot_id) == millis


@pytest.mark.parametrize(
    "snapshot_id",
    ["", "0", "abc-1", "4832b09a1a-20c38abd", "4832b09a-../etc", "4832b09a-a/b", "4832b09A-1"],
)
def test_not_snapshot_ids(snapshot_id: str) -> None:
    assert not is_snapshot_id(snapshot_id)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        (Long(3), 3),
        (3.9, 3),
        (-3.9, -3),
        ("3", 3),
        (" 3.0 ", 3),
        ("1e2", 100),
        ("3d", 3),
        ("+4", 4),
        (Decimal("5.5"), 5),
        (TypedText("xs:unsignedShort", "6"), 6),
        (2**40, 2**31 - 1),
        ("-Infinity", -(2**31)),
        ("NaN", 0),
        ("three", 0),
        ("", 0),
        (True, 0),
        (dt.datetime(2020, 1, 1, tzinfo=dt.UTC), 0),
        ([3], 0),
    ],
)
def test_item_integer_reads_as_java_getitemvalueinteger(value: object, expected: int) -> None:
    assert item_integer(Document({"n": [value]}), "n") == expected


def test_item_integer_missing_or_empty_is_zero() -> None:
    assert item_integer(Document({"n": []}), "n") == 0
    assert item_integer(Document(), "n") == 0


def test_snapshot_order_is_time_then_id() -> None:
    a, b, c = (f"{n}0000000-0000-0000-0000-000000000000" for n in "abc")
    ids = [f"{b}-1700000000001", f"{a}-1700000000001", f"{c}-1699999999999", "0123abcd-x"]
    # an old id without millis ("0123abcd-x") comes before every other
    assert sorted(ids, key=snapshot_order) == [ids[3], ids[2], ids[1], ids[0]]
