"""A wrapper built on DelegatingBackend keeps every behaviour of the store it wraps."""

from pathlib import Path

from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend


def test_groups_and_extras_pass_through(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "s") as inner, SQLiteBackend(tmp_path / "s") as reader:
        wrapped = DelegatingBackend(inner)
        assert wrapped.name == "sqlite" and wrapped.tuning is inner.tuning  # extras reachable
        with wrapped.grouped():
            wrapped.put(SNAPSHOTS, [{"snapshot": "a-1", "data": b"x"}])
            assert reader.get(SNAPSHOTS, {"snapshot": "a-1"}) is None  # one group: not yet
        assert reader.get(SNAPSHOTS, {"snapshot": "a-1"}) == {"snapshot": "a-1", "data": b"x"}
        assert [r["snapshot"] for r in wrapped.scan(SNAPSHOTS)] == ["a-1"]
        wrapped.delete(SNAPSHOTS, {"snapshot": "a-1"})
        assert wrapped.get(SNAPSHOTS, {"snapshot": "a-1"}) is None
        assert wrapped.describe()["kind"] == "sqlite"
