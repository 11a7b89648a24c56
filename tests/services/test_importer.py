"""The importer's one way in (``archive_stream``), used by the CLI's import and the HTTP
push alike: a bad document is reported and the rest goes in; a failing store ends it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.json_codec import to_json
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.services.importer import find_sources, import_sources
from imixs_archive.storage.base import Backend
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import Table
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import make_snapshot


class WritesFail(DelegatingBackend):
    """Every write fails as unavailable once ``down`` is set."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.down = False

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        if self.down:
            raise StoreUnavailableError("the store is unavailable (test)")
        return self.inner.put(table, rows)


@pytest.mark.parametrize("suffix", [".json", ".xml"])
def test_a_failing_store_ends_the_import_instead_of_failing_each_document(
    tmp_path: Path, suffix: str
) -> None:
    # Before, a JSON document whose write failed was counted as one failed document and
    # the import went on to the next (the HTTP push stopped instead), and an XML file
    # whose store failed was one failed file, the next file tried against the same store.
    docs = [make_snapshot(n) for n in range(3)]
    for name in ("a", "b"):
        body = to_json(docs) if suffix == ".json" else to_xml(docs, collection=True)
        (tmp_path / f"{name}{suffix}").write_bytes(body)
    with WritesFail(SQLiteBackend(tmp_path / "store.db")) as backend, Archive(backend) as archive:
        backend.down = True
        with pytest.raises(StoreUnavailableError):
            import_sources(archive, find_sources([str(tmp_path)]))
        backend.down = False
        summary = import_sources(archive, find_sources([str(tmp_path)]))
        assert (summary.new, summary.failed) == (3, 0)


def test_a_bad_json_document_is_reported_and_the_rest_goes_in(tmp_path: Path) -> None:
    docs = [make_snapshot(0), Document({"txtname": ["no $uniqueid"]}), make_snapshot(1)]
    (tmp_path / "in.json").write_bytes(to_json(docs))
    with SQLiteBackend(tmp_path / "store.db") as backend, Archive(backend) as archive:
        summary = import_sources(archive, find_sources([str(tmp_path / "in.json")]))
    assert (summary.new, summary.failed) == (2, 1), summary.failures
    assert summary.failures[0].startswith(f"{tmp_path / 'in.json'} (document 2)")
