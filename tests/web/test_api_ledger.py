"""The ledger over HTTP, through the real socket on loopback: ``/api/ledger`` (its state,
the signed checkpoint, inclusion and consistency proofs, ledger verify as a job), the
Monitor's Ledger card, the ledger gauges of /metrics, and the sequencing ``serve`` runs
on its own (``ARCHIVE_LEDGER_INTERVAL``).

Each test has a service of its own over a store of four snapshots, the ledger's key in the
store's folder (``ARCHIVE_DATA_DIR``), so that the command line (``ledger head``,
``ledger key``, ``check-proof``) reads the same ledger. ``ARCHIVE_LEDGER_INTERVAL=0``
unless a test is about the schedule: nothing is logged until a request asks for it."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from imixs_archive.archive.snapshot_xml import seal, snapshot_xml
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import IntegrityError
from imixs_archive.ledger.entries import DELETED, STORED
from imixs_archive.ledger.forks import record_fork
from imixs_archive.ledger.proofs import check_inclusion
from imixs_archive.ledger.sequencer import LEASE, Sequencer
from imixs_archive.ledger.tree import read_tree
from imixs_archive.services.jobs import Job
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.tlog.merkle import ProofError, verify_consistency
from imixs_archive.tlog.note import (
    Checkpoint,
    NoteError,
    UnverifiedNote,
    Verifier,
    generate_signer,
    open_note,
)
from imixs_archive.web.app import create_app
from support.snapshots import make_snapshot
from web.live import LiveServer, credentials_env, start_server
from web.test_api_access import assert_problem
from web.test_store_down import Switchable

STEPS = range(4)
JOB_TIMEOUT = 30.0


def _sid(step: int) -> str:
    return str(make_snapshot(step).get_first("$uniqueid"))


@contextmanager
def serving(
    tmp: Path,
    env: dict[str, str] | None = None,
    *,
    wrap: Callable[[Backend], Backend] | None = None,
) -> Iterator[LiveServer]:
    """A service over a new store of the snapshots ``STEPS``, the users of ``live.py``
    (mia: manager, rex: reader), the ledger's key in the store's folder."""
    store = tmp / "store"
    with SQLiteBackend(store) as backend:
        settings = load_settings(
            {
                **credentials_env(),
                "ARCHIVE_DATA_DIR": str(store),
                "ARCHIVE_BACKUP_DIR": str(tmp / "backups"),
                "ARCHIVE_LEDGER_INTERVAL": "0",
                **(env or {}),
            }
        )
        app = create_app(settings, wrap(backend) if wrap is not None else backend)
        archive = app.state.services.archive
        for step in STEPS:
            archive.store(make_snapshot(step))
        live = start_server(app, settings, archive)
        try:
            yield live
        finally:
            live.stop()


@pytest.fixture
def ledger_live(tmp_path: Path) -> Iterator[LiveServer]:
    """A service that sequences only when a request asks it to."""
    with serving(tmp_path) as live:
        yield live


def _store(live: LiveServer, step: int) -> str:
    """Store snapshot ``step`` over the API (as a workflow pushes one); its id."""
    doc = make_snapshot(step)
    with live.socket_client("manager") as client:
        answer = client.post("/api/archive/snapshot", content=to_xml(doc))
    assert answer.status_code == 201, answer.text
    return str(doc.get_first("$uniqueid"))


def _checkpoint(live: LiveServer) -> str:
    with live.socket_client("manager") as client:
        answer = client.post("/api/ledger/checkpoint")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return answer.text


def _opened(note: str, public_key: str) -> Checkpoint:
    """The checkpoint a note signs, once the ledger's public key verifies it."""
    return Checkpoint.parse(open_note(note, [Verifier.from_vkey(public_key)]).text)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def _gauge(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(f"imixs_archive_{name} "):
            return float(line.rsplit(" ", 1)[1])
    return None


def _cell(page: str, attribute: str) -> str:
    inner = page.split(f"<td {attribute}>", 1)[1].split("</td>", 1)[0]
    return re.sub(r"\s+", " ", inner).strip()


def _ledger_card(page: str) -> str:
    return page.split('<section class="card" id="ledger">', 1)[1].split("</section>", 1)[0]


def _wait_for_job(client: httpx.Client, path: str) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_TIMEOUT
    while time.monotonic() < deadline:
        answer = client.get(path)
        assert answer.status_code == 200, answer.text
        status: dict[str, Any] = answer.json()
        if not status["active"]:
            return status
        time.sleep(0.05)
    raise AssertionError(f"{path} did not finish")


def _wait_for_size(live: LiveServer, size: int, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with live.socket_client("reader") as client:
        while True:
            state: dict[str, Any] = client.get("/api/ledger").json()
            if state["size"] >= size or time.monotonic() > deadline:
                return state
            time.sleep(0.05)


# ---- /api/ledger and /api/ledger/checkpoint --------------------------------------------


def test_a_checkpoint_asked_of_a_stopped_ledger_is_a_conflict(ledger_live: LiveServer) -> None:
    """A ledger stopped on a fork (``ledger/forks.py``) signs nothing: a checkpoint asked
    over the API is refused with 409 and the reason, not a 502 as if the store failed."""
    _store(ledger_live, 77)
    _checkpoint(ledger_live)
    record_fork(ledger_live.archive.ledger, "the log is not the one signed (test)", "test", 0)
    with ledger_live.socket_client("manager") as client:
        answer = client.post("/api/ledger/checkpoint")
        state = client.get("/api/ledger").json()
    problem = assert_problem(answer, 409)
    assert "the log is not the one signed (test)" in str(problem["message"])
    assert problem["type"] == "urn:imixs-archive:problem:ledger-stopped"  # not damaged data
    assert "the log is not the one signed (test)" in str(state["stopped"])


def test_the_ledger_before_anything_is_logged(ledger_live: LiveServer) -> None:
    with ledger_live.socket_client("reader") as client:
        state = client.get("/api/ledger")
        missing = client.get("/api/ledger/checkpoint")
        metrics = client.get("/metrics").text
        page = client.get("/ui/monitor")
    assert state.status_code == 200, state.text
    assert state.json() == {
        "started": False,
        "size": 0,
        "origin": None,
        "public_key": None,
        "checkpoint": None,
        "checkpoint_size": None,
        "checkpoint_at": None,
        "last_verify": None,
        "stopped": None,
        "signs_here": False,
        "key_note": "",
        "last_round": None,
        "last_error": None,
    }
    assert "no signed checkpoint yet" in str(assert_problem(missing, 404)["message"])
    assert _gauge(metrics, "ledger_entries") == 0
    # at 0 before the first checkpoint and verify: a series from the first scrape (issue 46)
    assert _gauge(metrics, "ledger_checkpoint_entries") == 0
    assert _gauge(metrics, "ledger_checkpoint_seconds") == 0
    assert _gauge(metrics, "ledger_verify_problems") == 0
    assert _gauge(metrics, "ledger_verify_seconds") is None
    assert page.status_code == 200
    assert "Not started yet" in _ledger_card(page.text)
    assert read_tree(ledger_live.archive.ledger) is None  # a look did not start it


def test_a_checkpoint_signed_over_http_is_what_the_command_line_shows(
    ledger_live: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    before = int(time.time() * 1000)
    note = _checkpoint(ledger_live)
    with ledger_live.socket_client("reader") as client:
        state = client.get("/api/ledger").json()
        served = client.get("/api/ledger/checkpoint")
    assert served.status_code == 200 and served.text == note
    assert served.headers["content-type"].startswith("text/plain")
    tree = read_tree(ledger_live.archive.ledger)
    assert tree is not None
    assert state["started"] is True and state["size"] == tree.size == len(STEPS)
    assert (state["origin"], state["public_key"]) == (tree.origin, tree.key)
    assert state["checkpoint"] == tree.checkpoint == note
    assert state["checkpoint_size"] == tree.checkpoint_size == len(STEPS)
    assert before <= state["checkpoint_at"] == tree.checkpoint_at <= int(time.time() * 1000)
    assert state["signs_here"] is True and state["key_note"] == ""
    # What an operator sees on the command line, where the key is
    store = str(ledger_live.settings.data_dir)
    code, head = _cli(capsys, "ledger", "head", "--data-dir", store)
    assert code == 0 and head == note
    code, key = _cli(capsys, "ledger", "key", "--data-dir", store)
    assert code == 0 and key.strip() == state["public_key"]
    # The note verifies against the public key, and signs the tree's root
    opened = _opened(note, state["public_key"])
    assert (opened.origin, opened.size, opened.root_hash) == (tree.origin, tree.size, tree.root)
    assert note.splitlines()[0] == state["origin"]
    with pytest.raises(NoteError):
        _opened(note.replace(f"\n{len(STEPS)}\n", f"\n{len(STEPS) + 1}\n", 1), tree.key)
    stranger = generate_signer(tree.origin).vkey()  # same name, another key
    with pytest.raises(UnverifiedNote):
        _opened(note, stranger)


def test_signing_logs_what_is_queued_and_needs_a_manager(ledger_live: LiveServer) -> None:
    for who in ("reader", "token-reader"):
        with ledger_live.socket_client(who) as client:
            problem = assert_problem(client.post("/api/ledger/checkpoint"), 403)
        assert "needs a manager" in str(problem["message"])
    with ledger_live.socket_client() as client:
        assert_problem(client.post("/api/ledger/checkpoint"), 401)
    assert read_tree(ledger_live.archive.ledger) is None  # nothing was logged nor signed
    first = _checkpoint(ledger_live)
    later = [_store(ledger_live, step) for step in (10, 11)]
    with ledger_live.socket_client("token-manager") as client:
        answer = client.post("/api/ledger/checkpoint")
    assert answer.status_code == 200, answer.text
    key = read_tree(ledger_live.archive.ledger)
    assert key is not None
    assert _opened(first, key.key).size == len(STEPS)
    assert _opened(answer.text, key.key).size == len(STEPS) + len(later)
    with ledger_live.socket_client("reader") as client:
        state = client.get("/api/ledger").json()
    assert state["size"] == state["checkpoint_size"] == len(STEPS) + len(later)
    assert state["checkpoint"] == answer.text


def test_a_process_without_the_key_says_so_and_signs_nothing(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    with serving(tmp_path, {"ARCHIVE_LEDGER_KEY": str(elsewhere / "other.key")}) as live:
        # The ledger was started by a process with another key: this one has its own file
        other = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "first")})
        with Sequencer(live.archive, other) as first:
            first.drain(checkpoint=True)
        tree = read_tree(live.archive.ledger)
        assert tree is not None and tree.checkpoint_size == len(STEPS)
        _store(live, 20)
        with live.socket_client("manager") as client:
            answer = client.post("/api/ledger/checkpoint")
            state = client.get("/api/ledger").json()
            metrics = client.get("/metrics").text
            card = _ledger_card(client.get("/ui/monitor").text)
        # No stale checkpoint passed off as new: a problem naming the reason
        problem = assert_problem(answer, 503)
        assert "no ledger key in" in str(problem["message"])
        assert state["size"] == len(STEPS) + 1  # what was queued is logged all the same
        assert state["checkpoint_size"] == len(STEPS) and state["signs_here"] is False
        assert "no ledger key in" in state["key_note"]
        assert _gauge(metrics, "ledger_signs") == 0
        assert "no ledger key in" in card and _cell(card, "data-ledger-size") == "5"


def test_a_checkpoint_asked_while_another_process_sequences_is_a_conflict(
    ledger_live: LiveServer,
) -> None:
    with Sequencer(ledger_live.archive, ledger_live.settings) as other:
        other.run()  # holds the lease now (another replica, or the command line)
        _store(ledger_live, 21)  # queued: the checkpoint the other signed lacks it
        with ledger_live.socket_client("manager") as client:
            answer = client.post("/api/ledger/checkpoint")
        problem = assert_problem(answer, 409)
        assert "sequences the ledger" in str(problem["message"])
        assert "try again shortly" in str(problem["message"])
    assert _checkpoint(ledger_live).splitlines()[1] == str(len(STEPS) + 1)  # the lease given up


# ---- proofs ----------------------------------------------------------------------------


def test_an_inclusion_proof_holds_offline_and_not_once_tampered(
    ledger_live: LiveServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _sid(1)
    with ledger_live.socket_client("reader") as client:
        answer = client.get(f"/api/ledger/proof/{sid}")  # nothing signed yet: signed now
        public_key = client.get("/api/ledger").json()["public_key"]
    assert answer.status_code == 200, answer.text
    proof = answer.json()
    keys = [Verifier.from_vkey(public_key)]
    checked = check_inclusion(proof, keys)
    assert (checked.entry.kind, checked.entry.target) == (STORED, sid)
    assert checked.index == proof["index"] and checked.checkpoint.size == len(STEPS)
    assert proof["snapshot"] == sid and proof["tree_size"] == len(STEPS)
    # The auditor's tool, with the file and the key only
    saved = tmp_path / "proof.json"
    saved.write_text(answer.text)
    code, out = _cli(capsys, "ledger", "check-proof", str(saved), "--key", public_key)
    assert code == 0 and out.startswith("holds: entry ") and f"stored {sid} sha256:" in out

    def tampered(**changes: Any) -> dict[str, Any]:
        return {**proof, **changes}

    other = proof["entry"].replace(sid, _sid(2))
    path = [base64.b64encode(b"\x00" * 32).decode(), *proof["proof"][1:]]
    note = proof["checkpoint"].replace(f"\n{len(STEPS)}\n", f"\n{len(STEPS) + 1}\n", 1)
    for bad, why in [
        (tampered(entry=other), f"the proof names snapshot {sid}, its entry is about"),
        (tampered(entry=other, snapshot=_sid(2)), "the entry is not in the signed log"),
        (tampered(snapshot=_sid(2)), f"the proof names snapshot {_sid(2)}"),
        (tampered(index=(proof["index"] + 1) % len(STEPS)), "the entry is not in the signed log"),
        (tampered(proof=path), "the entry is not in the signed log"),
        (tampered(checkpoint=note), "the proof's checkpoint"),
        (tampered(tree_size=len(STEPS) + 1), "its checkpoint signs"),
    ]:
        with pytest.raises(IntegrityError, match=why):
            check_inclusion(bad, keys)
    with pytest.raises(IntegrityError, match="the proof's checkpoint"):
        check_inclusion(proof, [generate_signer(checked.checkpoint.origin).verifier()])
    saved.write_text(json.dumps(tampered(entry=other)))
    code, _out = _cli(capsys, "ledger", "check-proof", str(saved), "--key", public_key)
    assert code == 5


def test_the_proof_of_a_deleted_snapshot_proves_its_deletion(ledger_live: LiveServer) -> None:
    sid = _sid(3)
    with ledger_live.socket_client("manager") as client:
        assert client.get(f"/api/ledger/proof/{sid}").status_code == 200
        assert client.delete(f"/api/archive/snapshot/{sid}").status_code == 200
        answer = client.get(f"/api/ledger/proof/{sid}")
        public_key = client.get("/api/ledger").json()["public_key"]
    assert answer.status_code == 200, answer.text
    checked = check_inclusion(answer.json(), [Verifier.from_vkey(public_key)])
    assert (checked.entry.kind, checked.entry.target) == (DELETED, sid)
    assert checked.index == len(STEPS) and checked.checkpoint.size == len(STEPS) + 1


@pytest.mark.parametrize(
    "snapshot_id",
    [
        _sid(50),
        "no-such-snapshot",
        "x" * 2000,
        "%C3%A4%E2%80%94%F0%9F%93%84",  # ä—📄
        "a%20b%3Cscript%3E",
        "hold%3A" + _sid(1),
    ],
    ids=["unknown", "word", "long", "unicode", "markup", "hold-subject"],
)
def test_no_proof_of_what_the_ledger_does_not_know(
    ledger_live: LiveServer, snapshot_id: str
) -> None:
    with ledger_live.socket_client("reader") as client:
        problem = assert_problem(client.get(f"/api/ledger/proof/{snapshot_id}"), 404)
    if snapshot_id.startswith("hold%3A"):  # a hold's subject names its case too
        assert "a legal hold's entries are about hold:<instance> / <case>" in problem["message"]
    else:
        assert "the ledger has no entry about snapshot" in str(problem["message"])


def test_a_consistency_proof_links_an_old_checkpoint_to_the_new(ledger_live: LiveServer) -> None:
    old_note = _checkpoint(ledger_live)
    for step in (30, 31, 32):
        _store(ledger_live, step)
    new_note = _checkpoint(ledger_live)
    tree = read_tree(ledger_live.archive.ledger)
    assert tree is not None
    old, new = _opened(old_note, tree.key), _opened(new_note, tree.key)
    assert (old.size, new.size) == (len(STEPS), len(STEPS) + 3)
    with ledger_live.socket_client("reader") as client:
        answer = client.get("/api/ledger/consistency", params={"from": old.size})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert (body["old_size"], body["tree_size"], body["checkpoint"]) == (
            old.size,
            new.size,
            new_note,
        )
        path = [base64.b64decode(item) for item in body["proof"]]
        assert path
        verify_consistency(old.size, new.size, old.root_hash, new.root_hash, path)
        with pytest.raises(ProofError):
            forged = bytes([path[0][0] ^ 1]) + path[0][1:]
            verify_consistency(
                old.size, new.size, old.root_hash, new.root_hash, [forged, *path[1:]]
            )
        with pytest.raises(ProofError):  # another old log is not the start of this one
            verify_consistency(old.size, new.size, new.root_hash, new.root_hash, path)
        for edge in (0, new.size):
            assert (
                client.get("/api/ledger/consistency", params={"from": edge}).json()["proof"] == []
            )
        assert client.get("/api/ledger/consistency").json()["old_size"] == 0


@pytest.mark.parametrize(
    ("given", "status", "said"),
    [
        ("-1", 400, "from: Input should be greater than or equal to 0"),
        ("8", 404, "the latest checkpoint signs 4 entries: no proof from 8"),
        (str(2**70), 404, "no proof from"),
        ("three", 400, "from:"),
        ("", 400, "from:"),
    ],
    ids=["negative", "past-the-log", "huge", "word", "empty"],
)
def test_a_consistency_proof_from_a_size_the_log_never_had_is_refused(
    ledger_live: LiveServer, given: str, status: int, said: str
) -> None:
    _checkpoint(ledger_live)
    with ledger_live.socket_client("reader") as client:
        problem = assert_problem(client.get(f"/api/ledger/consistency?from={given}"), status)
    assert said in str(problem["message"])


# ---- ledger verify as a job ------------------------------------------------------------


def test_ledger_verify_runs_as_a_job_and_names_an_altered_snapshot(
    ledger_live: LiveServer,
) -> None:
    with ledger_live.socket_client("reader") as client:
        never = client.get("/api/ledger/verify")
        assert never.status_code == 200
        assert never.json()["state"] == "not_run" and "has not run" in never.json()["message"]
        assert "needs a manager" in str(
            assert_problem(client.post("/api/ledger/verify"), 403)["message"]
        )
    with ledger_live.socket_client("manager") as client:
        started = client.post("/api/ledger/verify")
        assert started.status_code == 202, started.text
        assert started.json()["name"] == "ledger-verify"
        clean = _wait_for_job(client, "/api/ledger/verify")
    assert clean["state"] == "finished", clean
    result = clean["result"]
    assert result["ok"] is True and result["altered"] == [] and result["problems"] == []
    assert (result["checked"], result["snapshots"]) == (len(STEPS), len(STEPS))
    assert clean["message"] == "checked 4 entries, 4 snapshots: everything holds"
    # A snapshot row forged so that it still reads cleanly (its seal made again)
    backend = ledger_live.archive.backend
    sid = _sid(2)
    row = backend.get(SNAPSHOTS, {"snapshot": sid})
    assert row is not None
    forged = snapshot_xml(backend, row).replace(b">snapshot-workitem<", b">forged<")
    backend.put(SNAPSHOTS, [{"snapshot": sid, "data": seal(forged)}])
    with ledger_live.socket_client("manager") as client:
        assert client.get(f"/api/archive/snapshot/{sid}").status_code == 200  # reads cleanly
        assert client.post("/api/ledger/verify").status_code == 202
        found = _wait_for_job(client, "/api/ledger/verify")
    assert found["state"] == "finished", found
    result = found["result"]
    assert result["ok"] is False and result["altered"] == [sid] and result["altered_count"] == 1
    assert result["removed"] == [] and result["unlogged"] == []
    assert any(sid in problem for problem in result["problems"])
    assert (
        found["message"] == f"checked 4 entries, 4 snapshots: {result['problems_count']} problems"
    )
    with ledger_live.socket_client("reader") as client:
        listed = {job["name"]: job for job in client.get("/api/jobs").json()}
        state = client.get("/api/ledger").json()
        metrics = client.get("/metrics").text
    assert listed["ledger-verify"]["state"] == "finished"
    assert state["last_verify"]["ok"] is False and state["last_verify"]["altered"] == 1
    assert result["problems_count"] == 1  # one altered snapshot: one problem
    assert _gauge(metrics, "ledger_verify_problems") == 1


def test_a_second_verify_while_one_runs_is_a_conflict(ledger_live: LiveServer) -> None:
    gate = threading.Event()

    def hold(job: Job) -> str:
        gate.wait(10)
        return "held"

    jobs = ledger_live.app.state.services.jobs
    jobs.start("ledger-verify", hold)
    try:
        with ledger_live.socket_client("manager") as client:
            busy = client.post("/api/ledger/verify")
            running = client.get("/api/ledger/verify").json()
        assert "already running" in str(assert_problem(busy, 409)["message"])
        assert running["active"] is True
    finally:
        gate.set()
    assert jobs.wait("ledger-verify", 10) is not None


# ---- the Monitor and /metrics ------------------------------------------------------------


def test_the_monitor_and_metrics_show_the_checkpoint_and_the_last_verify(
    ledger_live: LiveServer,
) -> None:
    note = _checkpoint(ledger_live)
    with ledger_live.socket_client("manager") as client:
        assert client.post("/api/ledger/verify").status_code == 202
        status = _wait_for_job(client, "/api/ledger/verify")
        page = client.get("/ui/monitor")
        metrics = client.get("/metrics").text
        state = client.get("/api/ledger").json()
    assert status["result"]["ok"] is True
    assert page.status_code == 200
    card = _ledger_card(page.text)
    assert _cell(card, "data-ledger-size") == "4"
    assert re.fullmatch(
        r"4 entries, signed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC",
        _cell(card, "data-ledger-checkpoint"),
    ), card
    assert re.fullmatch(
        r"everything holds: 4 entries, 4 snapshots, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC",
        _cell(card, "data-ledger-verify"),
    ), card
    assert "data-ledger-verify-failed" not in card
    assert state["origin"] in card and state["public_key"] in card
    assert note.splitlines()[0] == state["origin"]
    assert _gauge(metrics, "ledger_entries") == 4
    assert _gauge(metrics, "ledger_checkpoint_entries") == 4
    assert _gauge(metrics, "ledger_checkpoint_seconds") == state["checkpoint_at"] / 1000
    assert _gauge(metrics, "ledger_verify_problems") == 0
    assert _gauge(metrics, "ledger_verify_seconds") == state["last_verify"]["finished"] / 1000
    assert _gauge(metrics, "ledger_signs") == 1
    # A snapshot removed behind the archive's back: the card and the gauge say so
    ledger_live.archive.backend.delete(SNAPSHOTS, {"snapshot": _sid(0)})
    with ledger_live.socket_client("manager") as client:
        assert client.post("/api/ledger/verify").status_code == 202
        found = _wait_for_job(client, "/api/ledger/verify")
        card = _ledger_card(client.get("/ui/monitor").text)
        metrics = client.get("/metrics").text
    assert found["result"]["removed"] == [_sid(0)]
    assert "data-ledger-verify-failed" in card and _sid(0) in card
    assert _cell(card, "data-ledger-verify").startswith("PROBLEMS FOUND: 4 entries, 3 snapshots")
    assert _gauge(metrics, "ledger_verify_problems") == 1


def test_the_monitor_says_the_ledger_state_is_unknown_while_the_store_is_down(
    tmp_path: Path,
) -> None:
    switch: list[Switchable] = []

    def wrap(backend: Backend) -> Backend:
        switch.append(Switchable(backend))
        return switch[0]

    with serving(tmp_path, wrap=wrap) as live:
        _checkpoint(live)
        store = switch[0]
        store.down = True
        try:
            with live.socket_client("reader") as client:
                page = client.get("/ui/monitor")
                metrics = client.get("/metrics")
                state = client.get("/api/ledger")
                proof = client.get(f"/api/ledger/proof/{_sid(1)}")
        finally:
            store.down = False
        assert page.status_code == 200
        card = _ledger_card(page.text)
        assert "ledger state unknown" in card and "only 1 of 2 replicas" in card
        assert metrics.status_code == 200 and _gauge(metrics.text, "ledger_entries") is None
        assert "only 1 of 2 replicas" in str(assert_problem(state, 503)["message"])
        assert_problem(proof, 503)
        with live.socket_client("reader") as client:
            card = _ledger_card(client.get("/ui/monitor").text)
        assert _cell(card, "data-ledger-size") == "4"


# ---- serve sequences on its own --------------------------------------------------------


def test_serve_sequences_on_its_own_and_gives_the_lease_up(tmp_path: Path) -> None:
    env = {"ARCHIVE_LEDGER_INTERVAL": "0.1", "ARCHIVE_LEDGER_CHECKPOINT_ENTRIES": "1"}
    with serving(tmp_path, env) as live:
        state = _wait_for_size(live, len(STEPS))
        assert state["size"] == len(STEPS) and state["last_round"] is not None
        sid = _store(live, 40)
        state = _wait_for_size(live, len(STEPS) + 1)
        assert state["size"] == len(STEPS) + 1, state  # no drain was asked for
        assert state["checkpoint_size"] == len(STEPS) + 1  # a checkpoint every entry
        with live.socket_client("reader") as client:
            proof = client.get(f"/api/ledger/proof/{sid}").json()
        assert check_inclusion(proof, [Verifier.from_vkey(state["public_key"])]).index == 4
        schedule = live.app.state.services.ledger
        lease = json.loads(live.archive.ledger.head.text(LEASE) or "{}")
        assert lease["holder"] == schedule.sequencer.holder
        assert lease["until"] > time.time() * 1000
        live.stop()
        lease = json.loads(live.archive.ledger.head.text(LEASE) or "{}")
        assert lease == {"holder": "", "until": 0}  # another replica takes over at once


def test_serve_logs_what_is_queued_once_more_when_it_stops(tmp_path: Path) -> None:
    with serving(tmp_path, {"ARCHIVE_LEDGER_INTERVAL": "3600"}) as live:
        assert _wait_for_size(live, len(STEPS))["size"] == len(STEPS)  # the round at start
        live.archive.store(make_snapshot(41))
        time.sleep(0.3)
        with live.socket_client("reader") as client:
            assert client.get("/api/ledger").json()["size"] == len(STEPS)  # no round since
        live.stop()
        tree = read_tree(live.archive.ledger)
        assert tree is not None and tree.size == len(STEPS) + 1
        assert json.loads(live.archive.ledger.head.text(LEASE) or "{}")["holder"] == ""


# ---- the OpenAPI description -----------------------------------------------------------


def test_the_openapi_description_declares_the_ledgers_answers(ledger_live: LiveServer) -> None:
    with ledger_live.socket_client() as client:
        spec = client.get("/api/openapi.json").json()
    paths = spec["paths"]
    expected = {
        ("/api/ledger", "get"): {"200", "401"},
        ("/api/ledger/checkpoint", "get"): {"200", "401", "404"},
        ("/api/ledger/checkpoint", "post"): {"200", "401", "403", "409", "503"},
        ("/api/ledger/proof/{snapshot_id}", "get"): {"200", "401", "404", "503"},
        ("/api/ledger/consistency", "get"): {"200", "400", "401", "404"},
        ("/api/ledger/verify", "post"): {"202", "401", "403", "409"},
        ("/api/ledger/verify", "get"): {"200", "401", "404"},
    }
    for (path, method), codes in expected.items():
        responses = paths[path][method]["responses"]
        assert codes <= set(responses), (path, method, sorted(responses))
        for code in codes - {"200", "202"}:
            assert "application/problem+json" in responses[code]["content"], (path, code)
    for path, method in [("/api/ledger/checkpoint", "get"), ("/api/ledger/checkpoint", "post")]:
        assert "text/plain" in paths[path][method]["responses"]["200"]["content"]
