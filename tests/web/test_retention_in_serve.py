"""``serve`` applies ARCHIVE_RETENTION every ARCHIVE_RETENTION_INTERVAL while it runs."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

from imixs_archive.archive.holds import place_hold
from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
from support.snapshots import make_snapshot
from web.live import credentials_env, start_server

OLD = "aaaaaaaa-0000-4000-8000-00000000000a"
HELD = "bbbbbbbb-0000-4000-8000-00000000000b"


def test_serve_deletes_expired_instances_on_its_schedule(tmp_path: Path) -> None:
    env = {
        "ARCHIVE_RETENTION": "*=1y",
        "ARCHIVE_RETENTION_INTERVAL": "100ms",
        "ARCHIVE_BACKUP_DIR": str(tmp_path / "backups"),
        "ARCHIVE_DATA_DIR": str(tmp_path / "data"),
        **credentials_env(),
    }
    settings = load_settings(env)
    app = create_app(settings, SQLiteBackend(tmp_path / "store"))
    archive = app.state.services.archive
    old = dt.datetime(2015, 1, 1, tzinfo=dt.UTC)  # make_snapshot ids are of 2023: expired
    archive.store(make_snapshot(0, origin=OLD, modified=old))
    archive.store(make_snapshot(0, origin=HELD, modified=old))
    place_hold(archive.backend, HELD, "audit", "tester", dt.datetime.now(dt.UTC))
    live = start_server(app, settings, archive)
    try:
        deadline = time.monotonic() + 60
        while archive.list_instance(OLD) and time.monotonic() < deadline:
            time.sleep(0.05)
        with live.client("reader") as client:
            assert client.get("/healthz").status_code == 200
    finally:
        live.stop()
    assert archive.list_instance(OLD) == []
    assert archive.list_instance(HELD)


def test_a_bad_policy_stops_the_server_from_starting(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "ARCHIVE_RETENTION": "forever",
            "ARCHIVE_RETENTION_INTERVAL": "1h",
            "ARCHIVE_DATA_DIR": str(tmp_path / "data"),
        }
    )
    with pytest.raises(ConfigError, match="retention rule"):
        create_app(settings, SQLiteBackend(tmp_path / "store"))
