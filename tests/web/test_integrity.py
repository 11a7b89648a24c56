"""Downloads over a real socket from a store with one corrupt piece: a file bad from its
first piece gets a 502 integrity problem; a piece that goes bad later cuts the answer short, so no
client can take it for complete (whole file, range, snapshot XML, by MD5). A damaged
snapshot row gets the integrity problem on every route that reads it."""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from imixs_archive.config import load_settings
from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA, SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
from support import raw_sqlite
from support.damage import flip_stored_bit
from support.snapshots import make_snapshot
from web.live import LiveServer, start_server

BIG = random.Random(13).randbytes(3_000_000)
MD5 = hashlib.md5(BIG).hexdigest().upper()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[LiveServer, SQLiteBackend, str]]:
    backend = SQLiteBackend(tmp_path / "store")
    settings = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "data")})
    app = create_app(settings, backend)
    archive = app.state.services.archive
    snapshot_id = archive.store(make_snapshot(files={"big.bin": BIG})).snapshot_id
    live = start_server(app, settings, archive)
    try:
        yield live, backend, snapshot_id
    finally:
        live.stop()
        backend.close()


def corrupt(backend: SQLiteBackend, index: int) -> None:
    ids = [r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": MD5})]
    data = bytearray(backend.get(DOCUMENTS_DATA, {"data_id": ids[index]})["data"])
    data[3] ^= 0x01
    backend.put(DOCUMENTS_DATA, [{"data_id": ids[index], "data": bytes(data)}])


def download(live: LiveServer, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    with (
        httpx.Client(base_url=live.url, timeout=30) as client,
        client.stream("GET", path, headers=headers) as answer,
    ):
        body = b"".join(answer.iter_raw())
        return answer.status_code, dict(answer.headers), body


def test_a_file_bad_from_the_start_gets_a_problem(
    server: tuple[LiveServer, SQLiteBackend, str],
) -> None:
    live, backend, snapshot_id = server
    corrupt(backend, 0)
    status, headers, body = download(live, f"/api/archive/snapshot/{snapshot_id}/file/big.bin")
    assert status == 502
    assert headers["content-type"] == "application/problem+json"
    assert b"corrupt" in body and snapshot_id.encode() in body
    assert b"urn:imixs-archive:problem:integrity" in body


@pytest.mark.parametrize(
    "path, headers",
    [
        ("/api/archive/snapshot/{sid}/file/big.bin", {}),
        ("/api/archive/snapshot/{sid}/file/big.bin", {"Range": "bytes=10-2999000"}),
        ("/api/archive/md5/" + MD5, {}),
        ("/api/archive/snapshot/{sid}", {}),
        ("/api/archive/snapshot/{sid}?format=json", {}),
    ],
    ids=["file", "range", "md5", "xml", "json"],
)
def test_a_piece_that_goes_bad_later_cuts_the_answer(
    server: tuple[LiveServer, SQLiteBackend, str], path: str, headers: dict[str, str]
) -> None:
    live, backend, snapshot_id = server
    url = path.format(sid=snapshot_id)
    status, _headers, _body = download(live, url, **headers)  # intact: the whole answer
    assert status in (200, 206)
    corrupt(backend, 5)
    with pytest.raises(httpx.RemoteProtocolError):
        download(live, url, **headers)


@pytest.mark.parametrize(
    "path",
    [
        "/api/archive/snapshot/{sid}",
        "/api/archive/snapshot/{sid}?format=json",
        "/api/archive/snapshot/{sid}/file/big.bin",
        "/ui/snapshot/{sid}",
    ],
)
def test_a_damaged_snapshot_row_gets_the_integrity_problem(
    server: tuple[LiveServer, SQLiteBackend, str], path: str
) -> None:
    live, backend, snapshot_id = server
    flip_stored_bit(backend, SNAPSHOTS, {"snapshot": snapshot_id}, random.Random(8))
    status, headers, body = download(live, path.format(sid=snapshot_id))
    assert status == 502
    assert snapshot_id.encode() in body
    if path.startswith("/api/"):
        assert headers["content-type"] == "application/problem+json"
        assert b"urn:imixs-archive:problem:integrity" in body


class Records(logging.Handler):
    """The records of a logger that does not propagate to the root (the server's)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def server_log() -> Iterator[list[logging.LogRecord]]:
    handler = Records()
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)


def test_a_cut_answer_logs_one_line_not_a_traceback(
    server: tuple[LiveServer, SQLiteBackend, str],
    caplog: pytest.LogCaptureFixture,
    server_log: list[logging.LogRecord],
) -> None:
    live, backend, _snapshot_id = server
    corrupt(backend, 5)
    with caplog.at_level(logging.INFO), pytest.raises(httpx.RemoteProtocolError):
        download(live, "/api/archive/md5/" + MD5)
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert f"/api/archive/md5/{MD5} cut short" in lines[0].getMessage()
    assert "is corrupt" in lines[0].getMessage() and lines[0].exc_info is None
    assert [r.getMessage() for r in server_log if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("packed", [None, 3_000], ids=["as-given", "packed"])
def test_a_piece_overwritten_with_text_is_corrupt_not_an_internal_error(
    server: tuple[LiveServer, SQLiteBackend, str],
    caplog: pytest.LogCaptureFixture,
    server_log: list[logging.LogRecord],
    packed: int | None,
) -> None:
    """A hand at the store (sqlite3) leaving text or NULL where a piece's bytes were."""
    live, backend, _snapshot_id = server
    first = next(iter(backend.scan(DOCUMENTS, {"md5": MD5})))["data_id"]
    with raw_sqlite.opened(backend.path) as raw:
        raw.execute(
            f"UPDATE {DOCUMENTS_DATA.name} SET data = 'garbage', raw_size = ? WHERE data_id = ?",
            (packed, first),
        )
    with caplog.at_level(logging.INFO):
        status, headers, body = download(live, "/api/archive/md5/" + MD5)
    assert status == 502
    assert headers["content-type"] == "application/problem+json"
    assert b"urn:imixs-archive:problem:integrity" in body and first.encode() in body
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and lines[0].exc_info is None, [r.getMessage() for r in lines]
    said = lines[0].getMessage()
    assert f"/api/archive/md5/{MD5}" in said and f"file {MD5}" in said and first in said
    assert "not bytes" in said or "not a zstd frame" in said
    assert [r.getMessage() for r in server_log if r.levelno >= logging.WARNING] == []
