"""The Statistics page and /api/stats say where the store's figures come from: not
counted yet, or the census and when it was counted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from imixs_archive.services.statistics import take_census
from support.snapshots import make_snapshot
from web.live import LiveServer, credentials_env, serve_store


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    env = {**credentials_env(), "ARCHIVE_CENSUS_INTERVAL": "0"}  # no census of its own
    yield from serve_store(tmp_path_factory.mktemp("census"), env)


def test_the_census_is_named_with_its_time(fresh: LiveServer) -> None:
    with fresh.client("reader") as client:
        before = client.get("/api/stats").json()
        fresh.archive.store(make_snapshot(0, files={"a.pdf": b"census " * 300}))
        stats = client.get("/api/stats").json()
        assert stats["snapshots"] == before["snapshots"] + 1
        assert stats["files"] == before["files"] + 1
        assert stats["file_bytes"] == before["file_bytes"] + 2100
        assert stats["counted"] is None and stats["stored_bytes"] is None
        page = client.get("/ui/stats", params={"refresh": "true"}).text
        assert "Stored bytes and dedup ratio: not counted yet" in page
        take_census(fresh.archive)
        stats = client.get("/api/stats").json()
        assert stats["counted"] is not None and stats["stored_bytes"] >= 2100
        assert stats["stored_files"] == stats["files"] and stats["pieces"] >= stats["files"]
        page = client.get("/ui/stats", params={"refresh": "true"}).text
        assert "as the store's census counted them" in page and "dedup ratio" in page
