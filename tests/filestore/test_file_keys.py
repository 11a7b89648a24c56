"""Every stored file's key, once (``gc._file_keys``): this archive's (``archive_files``) and
the Java service's (``documents`` only), walked side by side in their shared range order,
over several pages of each, with nothing held of the keys passed."""

from __future__ import annotations

import hashlib
import tracemalloc

from imixs_archive.filestore.gc import _file_keys
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_FILES, DOCUMENTS


def _key(number: int) -> str:
    return hashlib.md5(number.to_bytes(4, "big")).hexdigest().upper()


def _store(backend: Backend, ours: range, javas: range) -> None:
    """Keys of ``ours`` in archive_files, of ``javas`` in documents (three pieces each)."""
    backend.put(
        ARCHIVE_FILES,
        [{"md5": _key(n), "digest": "d" * 64, "size": 3, "pieces": 3} for n in ours],
    )
    backend.put(
        DOCUMENTS,
        [
            {"md5": _key(n), "sort_id": sort_id, "data_id": f"{n}-{sort_id}"}
            for n in javas
            for sort_id in range(3)
        ],
    )


def test_each_key_once_from_either_table(backend: Backend) -> None:
    # 0-1499 only this archive's record, 1000-2499 both, 2500-3199 only Java's rows
    _store(backend, range(2500), range(1000, 3200))
    keys = list(_file_keys(backend))
    assert len(keys) == len(set(keys)) == 3200
    assert set(keys) == {_key(n) for n in range(3200)}


def test_one_table_empty(backend: Backend) -> None:
    _store(backend, range(0), range(50))
    assert sorted(_file_keys(backend)) == sorted(_key(n) for n in range(50))
    _store(backend, range(100, 140), range(0))
    assert len(set(_file_keys(backend))) == len(list(_file_keys(backend))) == 90


def test_memory_does_not_grow_with_the_keys(backend: Backend) -> None:
    """The walk holds its pages, not the keys: 4,000 keys more cost no more memory."""

    def peak_of_a_walk() -> int:
        tracemalloc.start()
        try:
            for _key_seen in _file_keys(backend):
                pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    _store(backend, range(2000), range(1000, 3000))
    small = peak_of_a_walk()
    _store(backend, range(2000, 8000), range(3000, 7000))
    assert peak_of_a_walk() < small * 1.5 + 200_000
