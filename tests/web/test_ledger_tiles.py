"""``/ledger/``: the log as C2SP tlog-tiles over the real socket: what is served is the
tree the checkpoint signs, with the spec's types and caching; who may read it (an auditor
sees the log and no archived data; anyone, when the operator says so); paths the spec does
not write are 404."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import IntegrityError
from imixs_archive.ledger.keys import load_signer
from imixs_archive.ledger.proof_files import check_consistency, check_tlog_proof
from imixs_archive.tlog.merkle import leaf_hash, root_of
from imixs_archive.tlog.note import Checkpoint, open_note
from imixs_archive.web.credentials import hash_password
from support.snapshots import make_snapshot
from web.live import LiveServer, credentials_env
from web.test_api_ledger import STEPS, _sid, serving

AUDITOR = ("ada", "ada-secret")
YEAR = 365 * 24 * 3600


def _env(**more: str) -> dict[str, str]:
    users = credentials_env()["ARCHIVE_USERS"]
    auditor = f"{AUDITOR[0]}:auditor:{hash_password(AUDITOR[1], iterations=1000)}"
    return {"ARCHIVE_USERS": f"{users};{auditor}", **more}


@pytest.fixture
def signed(tmp_path: Path) -> Iterator[LiveServer]:
    """A service whose ledger has a checkpoint of its four snapshots."""
    with serving(tmp_path, _env()) as live:
        with live.socket_client("manager") as client:
            assert client.post("/api/ledger/checkpoint").status_code == 200
        yield live


def _auditor(live: LiveServer) -> httpx.Client:
    return live.socket_client(auth=AUDITOR)


def _bundle(data: bytes) -> list[bytes]:
    entries = []
    while data:
        length = int.from_bytes(data[:2], "big")
        entries.append(data[2 : 2 + length])
        data = data[2 + length :]
    return entries


def test_the_served_tiles_and_entries_are_the_tree_the_checkpoint_signs(
    signed: LiveServer, tmp_path: Path
) -> None:
    signer = load_signer(tmp_path / "store" / "ledger.key")
    assert signer is not None
    size = len(STEPS)
    with _auditor(signed) as client:
        answer = client.get("/ledger/checkpoint")
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "text/plain; charset=utf-8"
        assert answer.headers["cache-control"] == "no-cache"
        checkpoint = Checkpoint.parse(open_note(answer.text, [signer.verifier()]).text)
        assert checkpoint.size == size
        tile = client.get(f"/ledger/tile/0/000.p/{size}")
        bundle = client.get(f"/ledger/tile/entries/000.p/{size}")
        first = client.get("/ledger/tile/0/000.p/1")
    for served in (tile, bundle):
        assert served.status_code == 200
        assert served.headers["content-type"] == "application/octet-stream"
        assert served.headers["cache-control"] == f"private, max-age={YEAR}, immutable"
    entries = _bundle(bundle.content)
    assert [e.decode() for e in entries] == [
        logged.text for logged in signed.archive.ledger.entries(0)
    ]
    leaves = [leaf_hash(entry) for entry in entries]
    assert tile.content == b"".join(leaves)  # each entry's bytes hash to its leaf
    assert root_of(leaves) == checkpoint.root_hash
    assert first.content == leaves[0]  # a narrower width: the first hashes


@pytest.mark.parametrize(
    "path",
    [
        "0/000",  # a full tile the log does not have yet
        "0/000.p/5",  # wider than the log
        "entries/000.p/5",
        "1/000.p/1",  # a level above the log
        "0/001.p/1",
        "0/0",  # not three digits
        "0/x000/000",  # not the shortest
        "0/000.p/0",
        "0/000.p/256",
        "0/000.p/07",
        "64/000",
        "01/000",
        "0x/000",  # not a number
        "0/00\u0660.p/1",  # an Arabic-Indic zero: a digit to Python, not to the spec
        "05/000",
        "data/000",
        "0/000/",
    ],
)
def test_what_the_log_lacks_or_the_spec_does_not_write_is_404(
    signed: LiveServer, path: str
) -> None:
    with _auditor(signed) as client:
        answer = client.get(f"/ledger/tile/{path}")
    assert answer.status_code == 404, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")


def test_an_auditor_reads_the_log_and_no_archived_data(signed: LiveServer) -> None:
    snapshot = str(signed.archive.ledger.entry(0).text)  # type: ignore[union-attr]
    with _auditor(signed) as client:
        assert client.get("/ledger/checkpoint").status_code == 200
        assert client.get("/ledger/tile/entries/000.p/1").status_code == 200
        assert client.get("/api/ledger/checkpoint").status_code == 200
        assert client.get("/api/ledger/consistency?from=1").status_code == 200
        for denied in (
            "/api/ledger",
            "/api/stats",
            "/api/archive/snapshots?limit=1",
            "/ui/monitor",
            "/metrics",
        ):
            answer = client.get(denied)
            assert answer.status_code == 403, (denied, answer.status_code, answer.text)
        assert client.post("/api/ledger/checkpoint").status_code == 403
    assert '"kind":"stored"' in snapshot
    with signed.socket_client() as anonymous:
        assert anonymous.get("/ledger/checkpoint").status_code == 401
        assert anonymous.get("/ledger/tile/0/000.p/1").status_code == 401
    with signed.socket_client("reader") as reader:
        assert reader.get("/ledger/checkpoint").status_code == 200


def test_a_public_log_is_read_without_credentials_and_cached_by_anyone(tmp_path: Path) -> None:
    with serving(tmp_path, _env(ARCHIVE_LEDGER_PUBLIC="true")) as live:
        with live.socket_client("manager") as client:
            assert client.post("/api/ledger/checkpoint").status_code == 200
        with live.socket_client() as anonymous:
            assert anonymous.get("/ledger/checkpoint").status_code == 200
            tile = anonymous.get("/ledger/tile/0/000.p/4")
            assert tile.status_code == 200
            assert tile.headers["cache-control"] == f"public, max-age={YEAR}, immutable"
            assert anonymous.get("/api/stats").status_code == 401  # the rest is not public
            # nor the proofs of the API, which may make the service sequence and sign
            assert anonymous.get("/api/ledger/checkpoint").status_code == 401
            assert anonymous.get(f"/api/ledger/proof/{_sid(1)}").status_code == 401


def test_no_checkpoint_yet_is_404(tmp_path: Path) -> None:
    with serving(tmp_path, _env()) as live, _auditor(live) as client:
        assert client.get("/ledger/checkpoint").status_code == 404
        assert client.get("/ledger/tile/0/000.p/1").status_code == 404


def test_the_api_s_proofs_come_as_files_an_auditor_checks_offline(
    signed: LiveServer, tmp_path: Path
) -> None:
    signer = load_signer(tmp_path / "store" / "ledger.key")
    assert signer is not None
    with _auditor(signed) as client:
        old = client.get("/ledger/checkpoint").text
        snapshot = _sid(2)
        inclusion = client.get(f"/api/ledger/proof/{snapshot}").json()
    checked = check_tlog_proof(inclusion["file"], [signer.verifier()])
    assert (checked.entry.target, checked.index) == (snapshot, inclusion["index"])
    with signed.socket_client("manager") as client:
        assert (
            client.post("/api/archive/snapshot", content=to_xml(make_snapshot(9))).status_code
            == 201
        )
        assert client.post("/api/ledger/checkpoint").status_code == 200
    with _auditor(signed) as client:
        proof = client.get("/api/ledger/consistency?from=4").json()
    older, newer = check_consistency(old, proof["file"], [signer.verifier()])
    assert (older.size, newer.size) == (4, 5)
    # not a number as the spec writes it (ASCII digits, no leading 0, at most 20): refused
    for size in ("0x4", "04", "4\u0664", "4" * 5000):
        with pytest.raises(IntegrityError, match="is not a number"):
            check_consistency(
                old, proof["file"].replace("old 4", f"old {size}", 1), [signer.verifier()]
            )
