"""Ranges of the token ring (``Backend.scan_range`` on Cassandra): the CQL of a scan over
one range and the arithmetic between shares of the ring and tokens.

Cassandra keeps a table's partitions in the order of their partition key's token (the
Murmur3 partitioner's, a signed 64-bit number), so a range of tokens is a slice of every
table that no other range overlaps: several processes, each scanning its range, share one
pass over the table, and a scan that stopped goes on after the last token it finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from imixs_archive.storage.cassandra.cql import check_identifier
from imixs_archive.storage.model import Table

MIN_TOKEN = -(2**63)
"""The Murmur3 partitioner's lowest token: no partition has it (a range starting after it
starts at the beginning of the ring)."""
MAX_TOKEN = 2**63 - 1
RING = 2**64


def select_token_range(keyspace: str, table: Table, columns: Sequence[str]) -> str:
    """The rows whose partition's token lies after the first ``?`` and at or before the
    second, in token order, the token first (read it paged)."""
    key = ", ".join(check_identifier(name) for name in table.partition_key)
    names = ", ".join(check_identifier(name) for name in columns)
    where = f"token({key}) > ? AND token({key}) <= ?"
    qualified = f"{check_identifier(keyspace)}.{check_identifier(table.name)}"
    return f"SELECT token({key}), {names} FROM {qualified} WHERE {where}"


def bounds(after: object, upto: object) -> tuple[int, int]:
    """The tokens of a range given by positions (None: the start, the end)."""
    return (
        MIN_TOKEN if after is None else int(str(after)),
        MAX_TOKEN if upto is None else int(str(upto)),
    )


def token_at(share: Fraction) -> int:
    """The token ``share`` of the way round the ring."""
    share = min(max(Fraction(share), Fraction(0)), Fraction(1))
    return min(MAX_TOKEN, MIN_TOKEN + (RING * share.numerator) // share.denominator)
