"""Export one store into another: equal, resumable, verified."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from imixs_archive.archive.service_state import load_state, save_state
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.document.model import Document
from imixs_archive.recovery.export import export
from imixs_archive.storage.model import DOCUMENTS_DATA
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import make_snapshot

PDF = random.Random(3).randbytes(900_000)


def _fill(archive: Archive) -> list[str]:
    ids = [
        archive.store(
            make_snapshot(s, files={"a.pdf": PDF}, dollar_snapshot__history=9)
        ).snapshot_id
        for s in range(4)
    ]
    save_state(archive.backend, Document({"sync.point": 1700000000000, "sync.count": 4}))
    return ids


def test_export_copies_everything(archive: Archive, tmp_path: Path) -> None:
    ids = _fill(archive)
    with SQLiteBackend(tmp_path / "target") as backend:
        target = Archive(backend)
        summary = export(archive, target)
        assert (summary.copied, summary.present, summary.failed) == (4, 0, 0)
        for snapshot_id in ids:
            assert target.load(snapshot_id) == archive.load(snapshot_id)
        assert load_state(backend)["sync.count"] == [4]
        assert verify(backend).ok
        again = export(archive, target)
        assert (again.copied, again.present) == (0, 4)


def test_export_resumes_after_dying(archive: Archive, tmp_path: Path) -> None:
    ids = _fill(archive)
    with SQLiteBackend(tmp_path / "target") as backend:
        target = Archive(backend)
        seen: list[str] = []

        def die_after_two(snapshot_id: str) -> None:
            seen.append(snapshot_id)
            if len(seen) == 2:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            export(archive, target, on_snapshot=die_after_two)
        summary = export(archive, target)
        assert (summary.copied, summary.present) == (2, 2)
        assert sorted(target.iter_snapshot_ids()) == sorted(ids)


def test_export_reports_corrupt_source_data(archive: Archive, tmp_path: Path) -> None:
    _fill(archive)
    row = next(archive.backend.scan(DOCUMENTS_DATA))
    archive.backend.put(
        DOCUMENTS_DATA, [{"data_id": row["data_id"], "data": b"X" + row["data"][1:]}]
    )
    with SQLiteBackend(tmp_path / "target") as backend:
        summary = export(archive, Archive(backend))
    # The corrupt piece is noticed as it is read, before anything is copied.
    assert summary.failed == summary.corrupt == 4 and summary.copied == 0
    assert "is corrupt" in summary.failures[0] and "'a.pdf'" in summary.failures[0]
