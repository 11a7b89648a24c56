"""The log served as C2SP tlog-tiles is what Go's own ``golang.org/x/mod/sumdb`` reads and
verifies: a small Go program (``tests/ledger/tlogcheck``) is built and run against a real
``serve`` on loopback, as an auditor with standard tools would check the ledger.

Go is on CI's machines: there a missing ``go`` fails the test; elsewhere it skips."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.ledger.keys import load_signer
from imixs_archive.storage.model import ARCHIVE_LEDGER_TILES
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.credentials import hash_password
from support.snapshots import make_snapshot
from web.live import serve_process

PROGRAM = Path(__file__).resolve().parents[1] / "ledger" / "tlogcheck"
AUDITOR = ("ada", "ada-secret")
FIRST, MORE = 300, 20
"""Entries at the older checkpoint (a full tile of level 0 and a partial one, and a partial
tile of level 1), and those added after it."""


def _go() -> str:
    found = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("Go is not installed: CI's machines have it (/usr/local/go/bin)")
        pytest.skip("Go is not installed (CI runs this test)")
    return found


@pytest.fixture(scope="module")
def tlogcheck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program, built with the module cache and proxy of this machine."""
    out = tmp_path_factory.mktemp("go") / "tlogcheck"
    built = subprocess.run(
        [_go(), "build", "-o", str(out), "."],
        cwd=PROGRAM,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -buildvcs=false".strip()},
    )
    assert built.returncode == 0, built.stderr
    return out


def _store(store: Path, steps: range) -> None:
    with SQLiteBackend(store) as backend:
        archive = Archive(backend)
        for step in steps:
            archive.store(make_snapshot(step))


@pytest.fixture
def ledger_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Path]:
    """A store whose log has ``FIRST`` entries at an older checkpoint (kept in
    ``old-checkpoint``) and ``FIRST + MORE`` at the latest."""
    store = tmp_path / "store"
    _store(store, range(FIRST))
    assert main(["ledger", "checkpoint", "--data-dir", str(store)]) == 0
    (tmp_path / "old-checkpoint").write_text(capsys.readouterr().out, encoding="utf-8")
    _store(store, range(FIRST, FIRST + MORE))
    assert main(["ledger", "checkpoint", "--data-dir", str(store)]) == 0
    capsys.readouterr()
    yield store


def _serve(store: Path) -> tuple[subprocess.Popen[str], str]:
    users = f"{AUDITOR[0]}:auditor:{hash_password(AUDITOR[1], iterations=1000)}"
    env = {"ARCHIVE_DATA_DIR": str(store), "ARCHIVE_USERS": users, "ARCHIVE_LEDGER_INTERVAL": "0"}
    return serve_process(env)


def _check(
    program: Path, url: str, store: Path, *args: str, auth: str | None = ":".join(AUDITOR)
) -> subprocess.CompletedProcess[str]:
    signer = load_signer(store / "ledger.key")
    assert signer is not None
    env = {k: v for k, v in os.environ.items() if k != "TLOGCHECK_AUTH"}
    if auth is not None:
        env["TLOGCHECK_AUTH"] = auth
    command = [str(program), "-url", f"{url}/ledger", "-key", signer.vkey(), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def _texts(store: Path) -> list[str]:
    with SQLiteBackend(store) as backend:
        return [logged.text for logged in Archive(backend).ledger.entries(0)]


def test_go_s_tlog_reads_and_verifies_the_served_log(
    tlogcheck: Path, ledger_dir: Path, tmp_path: Path
) -> None:
    process, url = _serve(ledger_dir)
    try:
        checked = _check(tlogcheck, url, ledger_dir, "-old", str(tmp_path / "old-checkpoint"))
        assert checked.returncode == 0, checked.stderr
        report = json.loads(checked.stdout)
        assert report["size"] == FIRST + MORE and report["consistent_from"] == FIRST
        assert report["entries"] == _texts(ledger_dir)  # every entry, proved in the tree
        assert report["tile_reads"] <= 6  # 0/000, 0/001.p/64, 1/000.p/1 and the old edge's
        refused = _check(tlogcheck, url, ledger_dir, auth=None)
        assert refused.returncode == 1 and "401" in refused.stderr
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_go_s_tlog_finds_a_changed_tile(tlogcheck: Path, ledger_dir: Path) -> None:
    with SQLiteBackend(ledger_dir) as backend:
        key = {"level": 0, "idx": 0, "width": 256}
        row = backend.get(ARCHIVE_LEDGER_TILES, key)
        assert row is not None
        hashes = bytearray(row["hashes"])
        hashes[40] ^= 1  # the second leaf hash
        backend.put(ARCHIVE_LEDGER_TILES, [{**key, "hashes": bytes(hashes)}])
    process, url = _serve(ledger_dir)
    try:
        checked = _check(tlogcheck, url, ledger_dir)
        assert checked.returncode == 1
        assert "inconsistent tile" in checked.stderr, checked.stderr
    finally:
        process.terminate()
        process.communicate(timeout=60)
