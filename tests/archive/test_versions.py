"""The store's layout version: recorded by an archive that may write, refused when newer
than this version knows, by every command, before anything is read or changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from imixs_archive import __version__
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.versions import STORE_VERSION, check_store_version
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.errors import StoreError
from imixs_archive.ledger.books import BEFORE_LEDGER
from imixs_archive.runtime import open_archive
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_LEDGER_HEAD, ARCHIVE_VERSIONS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import make_snapshot

KEY = {"name": "store"}


def test_recorded_when_missing_by_an_archive_that_writes(backend: Backend) -> None:
    assert check_store_version(backend, record=False) == 0
    assert backend.get(ARCHIVE_VERSIONS, KEY) is None  # reading records nothing
    assert check_store_version(backend, record=True) == 0
    row = backend.get(ARCHIVE_VERSIONS, KEY)
    assert row == {**KEY, "version": STORE_VERSION, "written_by": __version__}
    assert check_store_version(backend, record=True) == STORE_VERSION


def test_a_newer_layout_is_refused(backend: Backend) -> None:
    backend.put(ARCHIVE_VERSIONS, [{**KEY, "version": STORE_VERSION + 1, "written_by": "9.0"}])
    for record in (False, True):
        newer = rf"newer layout \(version {STORE_VERSION + 1}; .* upgrade imixs-archive"
        with pytest.raises(StoreError, match=newer):
            check_store_version(backend, record=record)
    assert backend.get(ARCHIVE_VERSIONS, KEY)["version"] == STORE_VERSION + 1  # type: ignore[index]


def test_a_store_from_before_the_ledger_is_marked_for_ledger_init(archive: Archive) -> None:
    """Snapshots stored by a version before the ledger were logged by no entry: the store
    says so, so that ledger verify reports them as not logged (and logs them as found)
    instead of as written around the archive."""
    backend = archive.backend
    archive.store(make_snapshot(1))
    backend.put(ARCHIVE_VERSIONS, [{**KEY, "version": 1, "written_by": "0.0.9"}])
    assert archive.ledger.head.text(BEFORE_LEDGER) is None
    assert check_store_version(backend, record=True) == 1
    assert archive.ledger.head.text(BEFORE_LEDGER) is not None
    backend.delete(ARCHIVE_LEDGER_HEAD, {"name": BEFORE_LEDGER})
    assert check_store_version(backend, record=True) == STORE_VERSION  # upgraded: no mark
    assert archive.ledger.head.text(BEFORE_LEDGER) is None


def test_a_new_store_is_not_marked(backend: Backend) -> None:
    assert check_store_version(backend, record=True) == 0
    assert backend.get(ARCHIVE_LEDGER_HEAD, {"name": BEFORE_LEDGER}) is None


def test_every_command_refuses_a_newer_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path)})
    open_archive(settings).close()
    with SQLiteBackend(tmp_path) as backend:
        backend.put(ARCHIVE_VERSIONS, [{**KEY, "version": 99, "written_by": "9.0"}])
    sample = Path(__file__).resolve().parents[2] / "samples" / "ticket-1.xml"
    for command in (["stats"], ["verify"], ["import", str(sample)]):
        assert main([*command, "--data-dir", str(tmp_path)]) == 6
        err = capsys.readouterr().err
        assert "written by imixs-archive 9.0 in a newer layout (version 99" in err
