"""A set of strings in bounded memory that may answer "in it" wrongly, never "not in it"
wrongly: a Bloom filter that grows as items are added (a scalable Bloom filter).

The collector uses it for sets as large as the archive (the piece ids the ``documents``
rows list, the ids of the stored snapshots), where it only ever acts on "not in it" and a
wrong "in it" keeps garbage one collection longer. About 1.2 bytes per item at the default
error rate in one layer, up to about 3 as it grows (below), against ~100 in a Python set.
Each filter hashes with a key of its own, so the items one collection wrongly keeps are
other items at the next.

Layers of doubling capacity are added as it fills; their error rates halve, so the whole
stays below ``error``. Past ``max_bytes`` it stops growing and answers "in it" for
everything (``saturated``): still never a wrong "not in it".
"""

from __future__ import annotations

import hashlib
import math
import secrets

MAX_BYTES = 256 * 1024 * 1024
"""Memory one filter may take (some 100 million items at the default error rate: a
hundred terabytes of the Java service's 1 MiB pieces)."""


class _Layer:
    def __init__(self, capacity: int, error: float) -> None:
        self.capacity = capacity
        self.bits = max(64, math.ceil(-capacity * math.log(error) / math.log(2) ** 2))
        self.hashes = max(1, round(self.bits / capacity * math.log(2)))
        self.array = bytearray((self.bits + 7) // 8)
        self.count = 0

    def _positions(self, first: int, step: int) -> list[int]:
        return [(first + i * step) % self.bits for i in range(self.hashes)]

    def add(self, first: int, step: int) -> None:
        for pos in self._positions(first, step):
            self.array[pos >> 3] |= 1 << (pos & 7)
        self.count += 1

    def holds(self, first: int, step: int) -> bool:
        array = self.array
        return all(array[pos >> 3] & (1 << (pos & 7)) for pos in self._positions(first, step))


class BloomFilter:
    """Strings, added and asked for; see the module's text."""

    def __init__(
        self, capacity: int = 1 << 16, error: float = 0.01, max_bytes: int = MAX_BYTES
    ) -> None:
        self._capacity = capacity
        self._error = error
        self._max_bytes = max_bytes
        self._key = secrets.token_bytes(16)
        self._layers: list[_Layer] = []
        self.saturated = False
        """Grown to ``max_bytes``: answers "in it" for everything from then on."""
        self.count = 0

    @property
    def nbytes(self) -> int:
        return sum(len(layer.array) for layer in self._layers)

    def _hash(self, item: str) -> tuple[int, int]:
        digest = hashlib.blake2b(item.encode(), digest_size=16, key=self._key).digest()
        return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little") | 1

    def add(self, item: str) -> None:
        if self.saturated:
            return
        if not self._layers or self._layers[-1].count >= self._layers[-1].capacity:
            index = len(self._layers)
            layer = _Layer(self._capacity << index, self._error / 2 ** (index + 1))
            if self.nbytes + len(layer.array) > self._max_bytes:
                self.saturated = True
                self._layers = []  # freed: it answers "in it" for everything now
                return
            self._layers.append(layer)
        self._layers[-1].add(*self._hash(item))
        self.count += 1

    def __contains__(self, item: object) -> bool:
        if self.saturated:
            return True
        if not isinstance(item, str) or not self._layers:
            return False
        first, step = self._hash(item)
        return any(layer.holds(first, step) for layer in self._layers)
