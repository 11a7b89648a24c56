"""The workflow client against the double over loopback, and its error mapping."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive, StoreResult
from imixs_archive.config import load_settings
from imixs_archive.document.model import Document
from imixs_archive.errors import ConfigError, DocumentError, NotFoundError
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.workflow import (
    Credentials,
    WorkflowAuthError,
    WorkflowClient,
    WorkflowError,
    WorkflowRejectedError,
    WorkflowUnavailableError,
)
from imixs_archive.workflow.auth import (
    BasicAuth,
    BearerAuth,
    CookieAuth,
    FormAuth,
    OidcAuth,
    make_auth,
)
from imixs_archive.workflow.events import TOPIC_ADD, TOPIC_REMOVE, backup_topics
from support.canned_http import Canned, CannedServer
from support.workflow_double import WorkflowDouble


@pytest.fixture
def client(double: WorkflowDouble) -> Iterator[WorkflowClient]:
    with WorkflowClient(double.url, read_timeout=2.0) as running:
        yield running


def test_event_log_calls(double: WorkflowDouble, client: WorkflowClient) -> None:
    first = double.save()
    second = double.save()
    double.remove_snapshot(str(second.get_first("$uniqueid")))
    events = client.read_events()
    assert [e.topic for e in events] == [TOPIC_ADD, TOPIC_ADD, TOPIC_REMOVE]
    assert events[0].ref == first.get_first("$uniqueid")
    assert events[0].created is not None
    assert len(client.read_events(max_count=1)) == 1
    assert client.lock_event(events[0].id) is True
    assert client.lock_event(events[0].id) is True  # the workflow's lock is not exclusive
    assert [e.id for e in client.read_events()] == [events[1].id, events[2].id]
    client.unlock_event(events[0].id)
    client.unlock_event(events[0].id)
    assert len(client.read_events()) == 3
    with pytest.raises(WorkflowUnavailableError, match="500"):
        client.unlock_event(events[0].id)  # not locked
    client.lock_event(events[1].id)
    client.release_events(60_000)  # deletes the locked entry, whatever its age
    assert [e.id for e in client.read_events()] == [events[0].id, events[2].id]
    client.delete_event(events[0].id)
    client.delete_event(events[0].id)  # gone already: fine
    with pytest.raises(WorkflowUnavailableError, match="500"):
        client.lock_event(events[0].id)  # gone: the workflow throws
    client.put_event("snapshot.backup", "ref-1")
    assert [e.ref for e in client.read_events(["snapshot.backup"])] == ["ref-1"]


def test_documents_stream_into_the_archive(
    double: WorkflowDouble, client: WorkflowClient, tmp_path: Path
) -> None:
    content = random.Random(1).randbytes(3_000_000)
    snapshot = double.save(files={"big.bin": content, "small.txt": b"hi"})
    sid = str(snapshot.get_first("$uniqueid"))
    with SQLiteBackend(tmp_path / "store") as backend, Archive(backend) as archive:
        with client.stream_document(sid) as blocks:
            results = list(archive.ingest(blocks, name=sid))
        assert isinstance(results[0], StoreResult) and results[0].snapshot_id == sid
        assert archive.load(sid) == snapshot
    uid = sid.rsplit("-", 1)[0]
    assert client.get_document(uid, items=["$snapshotid"]) == Document({"$snapshotid": sid})
    with pytest.raises(NotFoundError):
        client.get_document("no-such-id")
    with pytest.raises(NotFoundError), client.stream_document("no-such-id"):
        pass


def test_syncpoint(double: WorkflowDouble, client: WorkflowClient) -> None:
    one = double.save(modified=1_700_000_000_000)
    assert client.syncpoint(0) == [one]
    with client.stream_syncpoint(0) as blocks:
        assert b"<document>" in b"".join(blocks)
    assert client.syncpoint(1_700_000_000_000) == []


def test_post_snapshot(double: WorkflowDouble, client: WorkflowClient) -> None:
    snapshot = double.save(subject="v1", files={"a.txt": b"abc"})
    sid = str(snapshot.get_first("$uniqueid"))
    uid = sid.rsplit("-", 1)[0]
    double.save(Document({"$uniqueid": uid, "subject": "v2"}))
    client.post_snapshot(snapshot)
    assert double.workitems[uid].get_first("$snapshotid") == sid
    assert double.workitems[uid].get_first("subject") == "v1"
    with pytest.raises(WorkflowRejectedError) as caught:
        client.post_snapshot(Document({"$uniqueid": "nonsense", "type": "snapshot-workitem"}))
    assert caught.value.error_code == "INVALID_PARAMETER"  # the engine's code for a bad id
    posts = double.stats.posts
    with pytest.raises(WorkflowRejectedError) as caught:  # the engine would store it
        client.post_snapshot(Document({"$uniqueid": f"{uid}-1700000000000", "type": "workitem"}))
    assert caught.value.error_code == "NOT_A_SNAPSHOT" and double.stats.posts == posts


def test_5xx_is_unavailable(double: WorkflowDouble, client: WorkflowClient) -> None:
    double.inject("status", path="^/api/eventlog/", status=503, times=1)
    with pytest.raises(WorkflowUnavailableError) as caught:
        client.read_events()
    assert caught.value.status == 503 and not caught.value.down
    assert client.read_events() == []


def test_reset_mid_body_raises_from_the_stream(
    double: WorkflowDouble, client: WorkflowClient
) -> None:
    snapshot = double.save(files={"a.bin": random.Random(2).randbytes(400_000)})
    double.inject("reset", times=1)
    with (
        pytest.raises(WorkflowUnavailableError),
        client.stream_document(str(snapshot.get_first("$uniqueid"))) as blocks,
    ):
        for _ in blocks:
            pass


def test_timeout_and_drop_are_unavailable(double: WorkflowDouble) -> None:
    snapshot = double.save()
    sid = str(snapshot.get_first("$uniqueid"))
    with WorkflowClient(double.url, read_timeout=0.2) as client:
        double.inject("timeout", delay=0.5, times=1)
        with pytest.raises(WorkflowUnavailableError, match="Timeout"):
            client.get_document(sid)
        double.inject("drop", times=1)
        with pytest.raises(WorkflowUnavailableError):
            client.get_document(sid)
        assert client.get_document(sid) == snapshot


def test_truncated_xml_is_a_document_error(
    double: WorkflowDouble, client: WorkflowClient, tmp_path: Path
) -> None:
    snapshot = double.save(files={"a.bin": b"z" * 100_000})
    double.inject("truncate", times=1)
    with SQLiteBackend(tmp_path / "s") as backend, Archive(backend) as archive:
        with (
            pytest.raises(DocumentError),
            client.stream_document(str(snapshot.get_first("$uniqueid"))) as blocks,
        ):
            list(archive.ingest(blocks))
        assert not archive.exists(str(snapshot.get_first("$uniqueid")))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_connection_refused_is_down() -> None:
    with WorkflowClient(f"http://127.0.0.1:{_free_port()}/api", connect_timeout=1) as client:
        with pytest.raises(WorkflowUnavailableError) as caught:
            client.read_events()
        assert caught.value.down


def test_error_mapping() -> None:
    answers = {
        "/api/eventlog/snapshot.add~snapshot.remove?maxCount=100": Canned(418),
        "/api/documents/x": Canned(200, b"<not xml"),
        "/api/documents/y": Canned(401),
        "/api/documents/z": Canned(200, b"<html>login</html>", {"Content-Type": "text/html"}),
    }
    with CannedServer(lambda seen: answers[seen.path]) as server:
        client = WorkflowClient(server.url("/api"))
        with pytest.raises(WorkflowError) as caught:
            client.read_events()
        assert caught.value.status == 418
        with pytest.raises(WorkflowError, match="not Imixs XML"):
            client.get_document("x")
        with pytest.raises(WorkflowError, match="401"):
            client.get_document("y")
        with pytest.raises(WorkflowAuthError, match="login page"), client.stream_document("z"):
            pass
    with pytest.raises(ConfigError, match="WORKFLOW_SERVICE_ENDPOINT"):
        WorkflowClient(" ")


def test_from_settings_and_make_auth() -> None:
    settings = load_settings(
        {
            "WORKFLOW_SERVICE_ENDPOINT": "http://127.0.0.1:1/api/",
            "WORKFLOW_SERVICE_USER": "u",
            "WORKFLOW_SERVICE_PASSWORD": "p",
            "WORKFLOW_SERVICE_AUTHMETHOD": "form",
            "WORKFLOW_REST_READTIMEOUT": "1500ms",
        }
    )
    with WorkflowClient.from_settings(settings) as client:
        assert client.endpoint == "http://127.0.0.1:1/api"
        assert isinstance(client.auth, FormAuth)
        assert client.auth.login_url == "http://127.0.0.1:1/api/j_security_check"
    endpoint = "http://h/api"
    assert make_auth(Credentials(), endpoint) is None
    assert isinstance(make_auth(Credentials("BASIC", "u", "p"), endpoint), BasicAuth)
    assert isinstance(make_auth(Credentials("COOKIE", "c", "v"), endpoint), CookieAuth)
    assert isinstance(make_auth(Credentials("JWT", token="t"), endpoint), BearerAuth)
    assert isinstance(make_auth(Credentials(token="t"), endpoint), BearerAuth)
    oidc = Credentials("OIDC", "u", "p", oidc_endpoint="http://h/token", oidc_client_id="c")
    assert isinstance(make_auth(oidc, endpoint), OidcAuth)
    for bad in (Credentials("KERBEROS", "u"), Credentials("JWT"), Credentials("OIDC", "u")):
        with pytest.raises(ConfigError):
            make_auth(bad, endpoint)


def test_backup_topics() -> None:
    assert backup_topics(["a", "", "b"]) == [
        "snapshot.backup",
        "snapshot.backup.a",
        "snapshot.backup.b",
    ]
