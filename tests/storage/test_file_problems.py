"""``Backend.file_problems``: the embedded store's own file checked below the rows
(SQLite's quick_check and integrity_check), each problem naming its table."""

from __future__ import annotations

from pathlib import Path

from imixs_archive.storage.model import SNAPSHOTS, SNAPSHOTS_BY_UNIQUEID
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.damage import damage_page


def _filled(folder: Path) -> None:
    with SQLiteBackend(folder) as store:
        store.put(
            SNAPSHOTS_BY_UNIQUEID,
            ({"uniqueid": f"u{n:05d}", "snapshot": f"s{n}"} for n in range(3000)),
        )
        store.put(SNAPSHOTS, ({"snapshot": f"s{n}", "data": bytes(2000)} for n in range(300)))


def test_a_whole_store_has_no_problems(tmp_path: Path) -> None:
    _filled(tmp_path)
    with SQLiteBackend(tmp_path) as store:
        assert store.file_problems() == []
        assert store.file_problems(full=True) == []
        assert store.file_problems(SNAPSHOTS.name) == []


def test_a_damaged_page_is_named_by_its_table_and_only_there(tmp_path: Path) -> None:
    _filled(tmp_path)
    damage_page(tmp_path, SNAPSHOTS_BY_UNIQUEID.name)
    with SQLiteBackend(tmp_path) as store:
        whole = store.file_problems()
        assert whole and all(line.startswith("snapshots_by_uniqueid: ") for line in whole), whole
        assert store.file_problems(SNAPSHOTS_BY_UNIQUEID.name)
        assert store.file_problems(SNAPSHOTS.name) == []
        assert store.file_problems(full=True)


def test_a_damaged_index_is_named_by_its_table(tmp_path: Path) -> None:
    _filled(tmp_path)
    damage_page(tmp_path, SNAPSHOTS.name, index=True)
    with SQLiteBackend(tmp_path) as store:
        found = store.file_problems(full=True)
        assert found and all(line.startswith("snapshots: ") for line in found), found
