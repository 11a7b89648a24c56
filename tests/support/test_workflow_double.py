"""The workflow double follows section 4 of the reference: checked over real HTTP with plain
httpx (not the project's client), so the client's tests rest on a double that is right."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator

import httpx
import pytest

from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import to_xml
from support.workflow_double import WorkflowDouble

TOPICS = "snapshot.add~snapshot.remove"


@pytest.fixture
def double() -> Iterator[WorkflowDouble]:
    with WorkflowDouble() as running:
        yield running


@pytest.fixture
def http(double: WorkflowDouble) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=double.url + "/", timeout=5) as client:
        yield client


def _events(http: httpx.Client, topics: str = TOPICS) -> list[Document]:
    response = http.get(f"eventlog/{topics}")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/xml"
    return read_xml(response.content)


def test_save_makes_a_snapshot_and_an_event(double: WorkflowDouble, http: httpx.Client) -> None:
    snapshot = double.save(subject="hello", files={"a.pdf": b"%PDF"})
    uid, millis = str(snapshot.get_first("$uniqueid")).rsplit("-", 1)
    work = double.workitems[uid]
    assert work.get_first("$snapshotid") == snapshot.get_first("$uniqueid")
    assert snapshot.get_first("type") == "snapshot-workitem"
    assert int(snapshot.get_first("$modified").timestamp() * 1000) == int(millis)
    [event] = _events(http)
    assert sorted(event) == ["created", "id", "ref", "topic"]
    assert event.get_first("topic") == "snapshot.add"
    assert event.get_first("ref") == snapshot.get_first("$uniqueid")
    body = http.get(f"documents/{event.get_first('ref')}").content
    assert body.startswith(b"<?xml") and b"<data " in body and b"<document>" in body
    assert read_xml(body) == [snapshot]
    assert http.get(f"documents/{uid}").status_code == 200
    assert http.get("documents/nothing-here").status_code == 404


def test_items_parameter(double: WorkflowDouble, http: httpx.Client) -> None:
    snapshot = double.save(subject="x")
    uid = str(snapshot.get_first("$uniqueid")).rsplit("-", 1)[0]
    [doc] = read_xml(http.get(f"documents/{uid}", params={"items": "$snapshotid"}).content)
    assert dict(doc) == {"$snapshotid": [snapshot.get_first("$uniqueid")]}


def test_the_lock_is_not_exclusive_as_in_the_workflow_code(
    double: WorkflowDouble, http: httpx.Client
) -> None:
    double.save()
    removed = double.save()
    double.remove_snapshot(str(removed.get_first("$uniqueid")))
    ids = [str(e.get_first("id")) for e in _events(http)]
    assert len(ids) == 3
    assert len(_events(http, "snapshot.remove")) == 1
    assert len(read_xml(http.get(f"eventlog/{TOPICS}", params={"maxCount": 2}).content)) == 2
    assert http.post(f"eventlog/lock/{ids[0]}").status_code == 200
    # A second lock succeeds too: the topic grows another suffix.
    assert http.post(f"eventlog/lock/{ids[0]}").status_code == 200
    assert [e.get_first("topic") for e in _events(http, "snapshot.add.lock.lock")] == [
        "snapshot.add.lock.lock"
    ]
    assert len(_events(http)) == 2
    assert http.post(f"eventlog/unlock/{ids[0]}").status_code == 200
    assert http.post(f"eventlog/unlock/{ids[0]}").status_code == 200
    assert len(_events(http)) == 3
    # Unlocking an entry that is not locked, or locking a missing one: 500.
    assert http.post(f"eventlog/unlock/{ids[0]}").status_code == 500
    assert http.post("eventlog/lock/no-such-entry").status_code == 500
    assert http.post("eventlog/unlock/no-such-entry").status_code == 500
    assert http.delete(f"eventlog/{ids[1]}").status_code == 204
    assert http.delete(f"eventlog/{ids[1]}").status_code == 204
    assert http.put("eventlog/snapshot.backup/some-ref", content=b"").status_code == 204
    assert [e.get_first("ref") for e in _events(http, "snapshot.backup")] == ["some-ref"]


def test_release_deletes_every_locked_entry_whatever_its_age(
    double: WorkflowDouble, http: httpx.Client
) -> None:
    for _ in range(3):
        double.save()
    first, second, third = (str(e.get_first("id")) for e in _events(http))
    http.post(f"eventlog/lock/{first}")
    http.post(f"eventlog/lock/{second}")
    http.post(f"eventlog/lock/{second}")  # .lock.lock: not found by release
    response = http.post(f"eventlog/release/60000/{TOPICS}~")
    assert response.status_code == 204
    assert first not in double.log  # locked just now, deleted all the same
    assert double.log[second].topic == "snapshot.add.lock.lock"
    assert [str(e.get_first("id")) for e in _events(http)] == [third]


def test_documented_behaviour_as_an_option() -> None:
    with WorkflowDouble(documented=True) as old, httpx.Client(base_url=old.url + "/") as http:
        old.save(modified=1_600_000_000_000)
        [event] = _events(http)
        event_id = event.get_first("id")
        assert http.post(f"eventlog/lock/{event_id}").status_code == 200
        assert http.post(f"eventlog/lock/{event_id}").status_code == 409
        assert http.post("eventlog/lock/nothing").status_code == 404
        http.post(f"eventlog/release/60000/{TOPICS}")
        assert _events(http) == []  # locked only just now
        time.sleep(0.05)
        http.post(f"eventlog/release/20/{TOPICS}")
        assert len(_events(http)) == 1
        assert http.delete(f"eventlog/{event_id}").status_code == 200
        assert http.delete(f"eventlog/{event_id}").status_code == 404
        for _ in range(20):
            old.save(modified=1_700_000_000_000)
        assert len(read_xml(http.get("snapshot/syncpoint/1600000000000").content)) == 16
        empty = http.get("snapshot/syncpoint/1700000000000")
        assert empty.status_code == 200 and read_xml(empty.content) == []


def test_syncpoint_fails_for_more_than_sixteen_per_timestamp(
    double: WorkflowDouble, http: httpx.Client
) -> None:
    base = 1_700_000_000_000
    for _ in range(16):
        double.save(modified=base - 10)
    for _ in range(17):
        double.save(modified=base)
    later = double.save(modified=base + 5)
    sixteen = read_xml(http.get(f"snapshot/syncpoint/{base - 11}").content)
    assert len(sixteen) == 16
    assert {int(d.get_first("$modified").timestamp() * 1000) for d in sixteen} == {base - 10}
    for point in (base - 10, base - 1):
        assert http.get(f"snapshot/syncpoint/{point}").status_code == 500
    assert read_xml(http.get(f"snapshot/syncpoint/{base}").content) == [later]
    empty = http.get(f"snapshot/syncpoint/{base + 5}")  # the engine: 200, an empty <data/>
    assert empty.status_code == 200 and read_xml(empty.content) == []


def test_a_java_archive_beside_releases_and_consumes(double: WorkflowDouble) -> None:
    from support.workflow_double import JavaArchiveBeside

    snapshots = [double.save() for _ in range(3)]
    double.log[double.events()[0].id].topic = "snapshot.add.lock"  # held by someone
    with JavaArchiveBeside(double, interval=0.05, consume=True) as java:
        deadline = time.monotonic() + 60
        while (double.events() or java.rounds < 2) and time.monotonic() < deadline:
            time.sleep(0.02)
    assert double.events() == []
    # The locked one was released away (deleted), the others consumed.
    assert sorted(java.taken) == sorted(str(s.get_first("$uniqueid")) for s in snapshots[1:])


def test_post_snapshot_restores_the_workitem(double: WorkflowDouble, http: httpx.Client) -> None:
    snapshot = double.save(subject="old")
    sid = str(snapshot.get_first("$uniqueid"))
    uid = sid.rsplit("-", 1)[0]
    double.save(Document({"$uniqueid": uid, "subject": "new"}))
    assert double.workitems[uid].get_first("subject") == "new"
    response = http.post(
        "snapshot", content=to_xml(snapshot), headers={"Content-Type": "application/xml"}
    )
    assert response.status_code == 200
    assert double.workitems[uid].get_first("subject") == "old"
    assert double.workitems[uid].get_first("$snapshotid") == sid
    assert double.workitems[uid].get_first("type") == "workitem"


def test_post_snapshot_refuses_bad_input_as_the_engine_does(http: httpx.Client) -> None:
    """Unreadable XML: 400; an id that is not a UUID: 406 with INVALID_PARAMETER; a type
    without ``snapshot-`` passes (the engine checks neither: tests/engine)."""
    assert http.post("snapshot", content=b"<document><item").status_code == 400
    response = http.post("snapshot", content=to_xml(Document({"$uniqueid": "x"})))
    assert response.status_code == 406
    [answer] = read_xml(response.content)
    assert answer.get_first("$error_code") == "INVALID_PARAMETER"
    assert answer.get_first("$error_message") == "invalid UUID pattern - x"
    plain = Document({"$uniqueid": "0123abcd-0000-4000-8000-000000000000-1700000000000"})
    assert http.post("snapshot", content=to_xml(plain)).status_code == 200


def test_post_snapshot_answers_the_workitem_and_stamps_the_snapshot_anew(
    double: WorkflowDouble, http: httpx.Client
) -> None:
    """As the engine: the restored snapshot is saved with a new ``$modified``, the workitem
    rebuilt without file contents is the answer, and a ``snapshot.add`` event is written."""
    old = Document(
        {
            "$uniqueid": "0123abcd-0000-4000-8000-0000000000aa-1600000000000",
            "type": "snapshot-workitem",
            "$modified": dt.datetime(2020, 9, 13, tzinfo=dt.UTC),
            "$file": [{"a.txt": ["text/plain", b"abc", {}]}],
        }
    )
    response = http.post("snapshot", content=to_xml(old))
    assert response.status_code == 200
    [workitem] = read_xml(response.content)
    sid = str(old.get_first("$uniqueid"))
    assert workitem.get_first("$snapshotid") == sid and workitem.get_first("type") == "workitem"
    assert workitem.get_first("$file")["a.txt"][1] == b""
    stored = double.snapshots[sid]
    assert stored.get_first("$modified") > old.get_first("$modified")
    assert stored.get_first("$file")["a.txt"][1] == b"abc"
    assert [e.ref for e in double.events()] == [sid]


def test_post_snapshot_needs_a_manager() -> None:
    with WorkflowDouble(manager=False) as double:
        snapshot = double.save()
        response = httpx.post(double.url + "/snapshot", content=to_xml(snapshot))
        assert response.status_code == 401  # as the engine answers (SnapshotRestService)


# ---- authentication ------------------------------------------------------------------------


def test_basic() -> None:
    with WorkflowDouble(auth="BASIC") as double:
        url = double.url + f"/eventlog/{TOPICS}"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, auth=("archive", "wrong")).status_code == 401
        assert httpx.get(url, auth=("archive", "s3cret")).status_code == 200


def test_form_session_and_expiry() -> None:
    with WorkflowDouble(auth="FORM") as double, httpx.Client() as http:
        url = double.url + f"/eventlog/{TOPICS}"
        page = http.get(url)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        bad = http.post(
            double.url + "/j_security_check", data={"j_username": "archive", "j_password": "x"}
        )
        assert "JSESSIONID" not in bad.cookies
        good = http.post(
            double.url + "/j_security_check", data={"j_username": "archive", "j_password": "s3cret"}
        )
        assert good.cookies["JSESSIONID"]
        assert http.get(url).headers["content-type"] == "application/xml"
        double.expire_sessions()
        assert http.get(url).headers["content-type"].startswith("text/html")


def test_cookie_and_jwt() -> None:
    with WorkflowDouble(auth="COOKIE") as double:
        url = double.url + f"/eventlog/{TOPICS}"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Cookie": "archive=s3cret"}).status_code == 200
    with WorkflowDouble(auth="JWT", token="abc") as double:
        url = double.url + f"/eventlog/{TOPICS}"
        assert httpx.get(url, headers={"Authorization": "Bearer abd"}).status_code == 401
        assert httpx.get(url, headers={"Authorization": "Bearer abc"}).status_code == 200


def test_oidc_grants_refresh_and_expiry() -> None:
    with WorkflowDouble(auth="OIDC") as double:
        url = double.url + f"/eventlog/{TOPICS}"
        client = {"client_id": "imixs-archive", "client_secret": "client-secret"}
        assert (
            httpx.post(
                double.token_url,
                data={**client, "grant_type": "password", "username": "archive", "password": "no"},
            ).status_code
            == 401
        )
        answer = httpx.post(
            double.token_url,
            data={**client, "grant_type": "password", "username": "archive", "password": "s3cret"},
        ).json()
        bearer = {"Authorization": f"Bearer {answer['access_token']}"}
        assert httpx.get(url, headers=bearer).status_code == 200
        double.expire_sessions()
        assert httpx.get(url, headers=bearer).status_code == 401
        refreshed = httpx.post(
            double.token_url,
            data={
                **client,
                "grant_type": "refresh_token",
                "refresh_token": answer["refresh_token"],
            },
        ).json()
        assert (
            httpx.get(
                url, headers={"Authorization": f"Bearer {refreshed['access_token']}"}
            ).status_code
            == 200
        )
        assert double.stats.grants == {"password": 1, "refresh_token": 1}


# ---- faults -------------------------------------------------------------------------------


def test_status_fault_counts_down(double: WorkflowDouble, http: httpx.Client) -> None:
    snapshot = double.save()
    path = f"documents/{snapshot.get_first('$uniqueid')}"
    fault = double.inject("status", status=503, times=2)
    assert [http.get(path).status_code for _ in range(3)] == [503, 503, 200]
    assert fault.hits == 2


def test_truncated_and_malformed_bodies_are_complete_answers(
    double: WorkflowDouble, http: httpx.Client
) -> None:
    snapshot = double.save(files={"a.bin": b"x" * 10_000})
    path = f"documents/{snapshot.get_first('$uniqueid')}"
    whole = http.get(path).content
    double.inject("truncate", times=1)
    assert whole.startswith(http.get(path).content) and len(http.get(path).content) == len(whole)
    double.inject("malformed", times=1)
    assert b"</itme>" in http.get(path).content


def test_reset_mid_body_timeout_and_drop(double: WorkflowDouble) -> None:
    snapshot = double.save(files={"a.bin": b"x" * 200_000})
    url = f"{double.url}/documents/{snapshot.get_first('$uniqueid')}"
    double.inject("reset", times=1)
    with pytest.raises(httpx.TransportError):
        httpx.get(url)
    double.inject("timeout", times=1, delay=0.5)
    with pytest.raises(httpx.TimeoutException):
        httpx.get(url, timeout=0.2)
    double.inject("drop", times=1)
    with pytest.raises(httpx.TransportError):
        httpx.get(url)
    assert httpx.get(url).status_code == 200


def test_slow_body_arrives_whole(double: WorkflowDouble) -> None:
    snapshot = double.save(files={"a.bin": b"y" * 50_000})
    url = f"{double.url}/documents/{snapshot.get_first('$uniqueid')}"
    whole = httpx.get(url).content
    double.inject("slow", delay=0.4, times=1)
    started = time.monotonic()
    assert httpx.get(url).content == whole
    assert time.monotonic() - started >= 0.3


def test_random_faults_follow_the_seed() -> None:
    with WorkflowDouble(seed=3) as double:
        snapshot = double.save()
        url = f"{double.url}/documents/{snapshot.get_first('$uniqueid')}"
        double.inject("status", probability=0.5)
        with httpx.Client() as http:
            codes = [http.get(url).status_code for _ in range(40)]
        assert 5 < codes.count(500) < 35 and codes.count(200) + codes.count(500) == 40
        double.clear_faults()
        assert httpx.get(url).status_code == 200
