"""A held instance's snapshot cannot be deleted over the API (409, the hold named) or from
the UI (the snapshot page says why); nothing of it is lost, and after the release both
delete it."""

from __future__ import annotations

import datetime as dt

from imixs_archive.archive.holds import place_hold, release_hold
from support.snapshots import make_snapshot
from web.live import LiveServer
from web.test_api_access import assert_problem

HELD = "0e1d0000-0000-4000-8000-000000000031"


def test_api_and_ui_delete_refuse_a_held_snapshot(live: LiveServer) -> None:
    doc = make_snapshot(31, origin=HELD, files={"evidence.txt": b"keep me"})
    live.archive.store(doc)
    sid = doc.get_first("$uniqueid")
    place_hold(live.archive.backend, HELD, "case 4711", "mia", dt.datetime.now(dt.UTC))
    try:
        with live.client("manager", follow_redirects=True) as client:
            problem = assert_problem(client.delete(f"/api/archive/snapshot/{sid}"), 409)
            message = str(problem["message"])
            assert "legal hold" in message and "case 4711" in message and sid in message
            page = client.post(f"/ui/actions/delete/{sid}", data={"confirm": "yes"})
            assert page.url.path == f"/ui/snapshot/{sid}"
            assert "under legal hold" in page.text and "case 4711" in page.text
            kept = client.get(f"/api/archive/snapshot/{sid}/file/evidence.txt")
            assert kept.status_code == 200 and kept.content == b"keep me"
    finally:
        release_hold(live.archive.backend, HELD)
    with live.client("manager", follow_redirects=True) as client:
        page = client.post(f"/ui/actions/delete/{sid}", data={"confirm": "yes"})
        assert f"deleted {sid}" in page.text
        assert client.get(f"/api/archive/snapshot/{sid}").status_code == 404


def test_ui_release_releases_the_case_of_its_row(live: LiveServer) -> None:
    """Two cases on one instance: the holds page lists both, each row's Release button
    releases its own case; the other keeps the instance held."""
    origin = "0e1d0000-0000-4000-8000-000000000032"
    doc = make_snapshot(32, origin=origin)
    live.archive.store(doc)
    sid = doc.get_first("$uniqueid")
    now = dt.datetime.now(dt.UTC)
    live.archive.holds.place(origin, "case 4711", "mia", now)
    live.archive.holds.place(origin, "case 4712", "tom", now)
    try:
        with live.client("manager", follow_redirects=True) as client:
            page = client.get("/ui/holds")
            for case in ("case 4711", "case 4712"):  # each row's button names its case
                assert f'<input type="hidden" name="reason" value="{case}">' in page.text
            assert page.text.count(f'id="hold-{origin}"') == 1  # the anchor, once
            snapshot = client.get(f"/ui/snapshot/{sid}")
            assert "under legal hold: case 4711; case 4712." in snapshot.text
            done = client.post(
                f"/ui/actions/release/{origin}", data={"confirm": "yes", "reason": "case 4712"}
            )
            assert "released (case 4712)" in done.text
        assert [h.reason for h in live.archive.holds.of(origin)] == ["case 4711"]
    finally:
        release_hold(live.archive.backend, origin)
