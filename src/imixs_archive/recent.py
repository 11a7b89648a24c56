"""Values kept by key in memory, the most recently used last, up to a number of bytes.

Each archive process keeps a few such memories, each bounded: pieces whose hash checked
out (``filestore/reading.py``), pieces a store wrote or compared lately
(``filestore/content.py``), and zstd frames unpacked lately with their bytes
(``storage/packing.py``). A value larger than an eighth of the limit is not kept (one
large value would push out many small ones). Thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    def __init__(self, limit: int, size: Callable[[V], int]) -> None:
        """``limit``: bytes kept at most, as ``size`` counts a value."""
        self._limit = limit
        self._measure = size
        self._size = 0
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Bytes kept now."""
        return self._size

    def get(self, key: K) -> V | None:
        with self._lock:
            known = self._values.get(key)
            if known is not None:
                self._values.move_to_end(key)
            return known

    def add(self, key: K, value: V) -> None:
        size = self._measure(value)
        if size > self._limit // 8:
            return
        with self._lock:
            old = self._values.pop(key, None)
            self._size += size - (self._measure(old) if old is not None else 0)
            self._values[key] = value
            while self._size > self._limit:
                _key, dropped = self._values.popitem(last=False)
                self._size -= self._measure(dropped)
