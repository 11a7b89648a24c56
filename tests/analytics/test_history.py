"""The history of one process instance: order, time between steps, item and file changes."""

from __future__ import annotations

import hashlib

import pytest

from imixs_archive.analytics.history import instance_history
from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import NotFoundError
from support.snapshots import ORIGIN, make_snapshot

PDF = b"%PDF-1.4 first " * 40
PDF2 = b"%PDF-1.4 second " * 40
NOTE = b"a note"


def md5(content: bytes) -> str:
    return hashlib.md5(content).hexdigest().upper()


@pytest.fixture
def stored(archive: Archive) -> Archive:
    # stored out of order: the history is in time order all the same
    steps = [
        make_snapshot(0, files={"a.pdf": PDF}, dollar_workflowstatus="Open"),
        make_snapshot(3, files={"a.pdf": PDF2}, dollar_workflowstatus="Completed"),
        make_snapshot(1, files={"a.pdf": PDF, "note.txt": NOTE}, dollar_workflowstatus="Open"),
        make_snapshot(2, files={"a.pdf": PDF2, "note.txt": NOTE}, txtcomment="ok"),
    ]
    for doc in steps:
        archive.store(doc)
    archive.store(make_snapshot(0, origin="11111111-2222-4333-8444-555555555555"))
    return archive


def test_steps_in_time_order_with_changes(stored: Archive) -> None:
    history = instance_history(stored, ORIGIN)
    assert [s.index for s in history.steps] == [0, 1, 2, 3]
    assert [s.since_previous for s in history.steps] == [None, 60.0, 60.0, 60.0]
    assert history.duration == 180.0
    assert [s.task for s in history.steps] == ["1000", "1001", "1002", "1003"]
    assert [s.status for s in history.steps] == ["Open", "Open", "", "Completed"]

    first, second, third, fourth = history.steps
    assert [(f.kind, f.name, f.key) for f in first.files] == [("added", "a.pdf", md5(PDF))]
    assert first.items == []
    assert [(f.kind, f.name) for f in second.files] == [("added", "note.txt")]
    assert {(c.name, c.kind) for c in second.items} == {
        ("$taskid", "changed"),
        ("subject", "changed"),
        ("$file.names", "changed"),
        ("$file.count", "changed"),
    }
    replaced = third.files[0]
    assert (replaced.kind, replaced.name, replaced.key, replaced.previous_key) == (
        "replaced",
        "a.pdf",
        md5(PDF2),
        md5(PDF),
    )
    assert replaced.size == len(PDF2)
    changes = {c.name: c for c in third.items}
    assert changes["txtcomment"].kind == "added" and changes["txtcomment"].new == ["ok"]
    assert changes["$workflowstatus"].kind == "removed"
    assert changes["$taskid"].old == [1001] and changes["$taskid"].new == [1002]
    assert [(f.kind, f.name) for f in fourth.files] == [("removed", "note.txt")]
    assert {"txtcomment", "$workflowstatus"} <= {c.name for c in fourth.items}


def test_history_as_json(stored: Archive) -> None:
    data = instance_history(stored, ORIGIN).to_json()
    assert data["snapshots"] == 4 and data["duration"] == 180.0
    step = data["steps"][2]
    assert step["files"][0]["kind"] == "replaced"
    assert step["time"].endswith("+00:00")
    assert {"name": "txtcomment", "kind": "added", "old": [], "new": ["ok"]} in step["items"]


def test_unknown_instance(archive: Archive) -> None:
    with pytest.raises(NotFoundError):
        instance_history(archive, "99999999-2222-4333-8444-555555555555")
