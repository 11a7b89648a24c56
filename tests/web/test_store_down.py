"""A store that stops answering (Cassandra with too few replicas up): /readyz, the Monitor
page and the metrics say so, and the service keeps answering."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from imixs_archive.config import load_settings
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import Table
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
from web.live import start_server


class Switchable(DelegatingBackend):
    """Every read and write fails as unavailable while ``down`` is set."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailableError("Cassandra is unavailable: only 1 of 2 replicas alive")

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        self._check()
        return self.inner.put(table, rows)

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        self._check()
        return self.inner.put_partition(table, rows)

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        self._check()
        return self.inner.put_new(table, row)

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        self._check()
        return self.inner.get(table, key, columns)

    def scan(
        self, table: Table, partition: Mapping[str, Any] | None = None, **options: Any
    ) -> Iterator[Row]:
        self._check()
        return self.inner.scan(table, partition, **options)


def test_readyz_monitor_and_metrics_show_an_unavailable_store(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "store") as inner:
        store = Switchable(inner)
        settings = load_settings(
            {"ARCHIVE_BACKUP_DIR": str(tmp_path / "b"), "ARCHIVE_DATA_DIR": str(tmp_path / "d")}
        )
        app = create_app(settings, store)
        live = start_server(app, settings, app.state.services.archive)
        try:
            _check_pages(live.client(), store)
        finally:
            live.stop()


def _check_pages(client: Any, store: Switchable) -> None:
    with client:
        assert client.get("/readyz").status_code == 200
        assert "imixs_archive_store_up 1.0" in client.get("/metrics").text
        store.down = True
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert "only 1 of 2 replicas" in ready.json()["checks"]["store"]["message"]
        page = client.get("/ui/monitor")
        assert page.status_code == 200
        assert "Store unavailable" in page.text and "only 1 of 2 replicas" in page.text
        assert "imixs_archive_store_up 0.0" in client.get("/metrics").text
        assert client.get("/healthz").status_code == 200
        store.down = False
        assert client.get("/readyz").status_code == 200
