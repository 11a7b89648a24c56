"""A store that stops answering (Cassandra with too few replicas up): /readyz, the Monitor
page and the metrics say so, and the service keeps answering."""

from __future__ import annotations

import os
import resource
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
from web.live import serve_store, start_server


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


def test_readyz_is_not_ready_when_the_store_file_is_gone(tmp_path: Path) -> None:
    """The connections open already read on from the moved file: only a new one, which a
    new thread needs, would fail. /readyz sees it before the requests do."""
    for live in serve_store(tmp_path, {}):
        path = Path(live.archive.storage.describe()["path"])
        with live.client() as client:
            assert client.get("/readyz").status_code == 200
            path.rename(path.with_name("moved.db"))
            try:
                ready = client.get("/readyz")
            finally:
                path.with_name("moved.db").rename(path)
            assert ready.status_code == 503
            message = ready.json()["checks"]["store"]["message"]
            assert f"the store's file {path} cannot be found" in message, message
            assert client.get("/readyz").status_code == 200


def test_readyz_is_not_ready_when_no_descriptor_is_left(tmp_path: Path) -> None:
    """Out of descriptors, a new store connection or request fails (502, 500), while a
    read on a connection open already still works: /readyz said ready."""
    for live in serve_store(tmp_path, {}):
        with live.client() as client:
            assert client.get("/readyz").status_code == 200
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            in_use = len(os.listdir("/proc/self/fd")) - 1  # less the listing's own
            resource.setrlimit(resource.RLIMIT_NOFILE, (in_use, hard))
            held = []
            try:
                while True:  # the free numbers below the limit taken: none left
                    held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                pass
            try:
                ready = client.get("/readyz")
            finally:
                for descriptor in held:
                    os.close(descriptor)
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            assert ready.status_code == 503
            message = ready.json()["checks"]["store"]["message"]
            assert "the process cannot open files: Too many open files" in message, message
            assert "file descriptors open" in message
            assert client.get("/readyz").status_code == 200
