"""Restore into the workflow, over real HTTP against the workflow test double."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from imixs_archive.archive.service_state import load_state
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document
from imixs_archive.recovery.backup import backup
from imixs_archive.recovery.restore import Restorer, RestoreRange, matches, parse_filter
from imixs_archive.recovery.restore_files import restore_files, tree_files
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.workflow.client import WorkflowClient
from support.restore_data import DAY, archived_instances, file_hashes
from support.workflow_double import WorkflowDouble

WIDE = RestoreRange(DAY - dt.timedelta(days=30), DAY + dt.timedelta(days=30))


def test_wipe_and_restore_brings_everything_back(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    newest = archived_instances(double, archive)
    before = {uid: double.snapshots[sid] for uid, sid in newest.items()}
    double.wipe()
    report = Restorer(archive, client).restore_range(WIDE)
    assert (report.restored, report.skipped, report.failed) == (4, 0, {})
    for uid, snapshot_id in newest.items():
        assert double.workitems[uid]["$snapshotid"] == [snapshot_id]
        restored = double.snapshots[snapshot_id].copy()
        # the workflow saves a restored snapshot as any document: $modified stamped anew
        assert restored.pop("$modified") > before[uid].get_values("$modified")
        assert restored == _without(before[uid], "$modified")
        assert file_hashes(restored) == file_hashes(before[uid])
    state = load_state(archive.backend)
    assert state["restore.count"] == [4] and state["restore.status"] == ["done"]
    again = Restorer(archive, client).restore_range(WIDE)
    assert (again.restored, again.skipped) == (0, 4)


def test_newest_snapshot_inside_the_range_is_restored(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    archived_instances(double, archive, instances=1)
    double.wipe()
    first_two_days = RestoreRange(DAY, DAY + dt.timedelta(days=1, hours=1))
    Restorer(archive, client).restore_range(first_two_days)
    [live] = double.workitems.values()
    assert live["$taskid"] == [1001]


def test_filters_restore_exactly_the_matching_instances(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    archived_instances(double, archive)
    double.wipe()
    wanted = RestoreRange(WIDE.first, WIDE.last, (parse_filter("subject=Ticket A.*"),))
    report = Restorer(archive, client).restore_range(wanted)
    assert (report.restored, report.filtered) == (2, 2)
    assert sorted(d.get_first("subject") for d in double.workitems.values()) == [
        "Ticket A0",
        "Ticket A2",
    ]


@pytest.mark.parametrize(
    ("filters", "strict", "restored"),
    [
        (["subject=A"], False, 2),  # Java's find(): a match anywhere in the value
        (["subject=A"], True, 0),  # strict: the whole value
        (["subject=^Ticket [AB][0-9]$"], True, 4),
        (["nosuchitem=x"], False, 4),  # Java: an instance without the item passes
        (["nosuchitem=x"], True, 0),
        (["subject= B "], False, 2),  # the expression is trimmed, as in Java
    ],
)
def test_filters_match_as_the_java_restore_does(
    double: WorkflowDouble,
    client: WorkflowClient,
    archive: Archive,
    filters: list[str],
    strict: bool,
    restored: int,
) -> None:
    archived_instances(double, archive)
    double.wipe()
    wanted = RestoreRange(WIDE.first, WIDE.last, tuple(map(parse_filter, filters)), strict=strict)
    report = Restorer(archive, client).restore_range(wanted)
    assert (report.restored, report.filtered) == (restored, 4 - restored)


def test_filter_values_must_all_match() -> None:
    doc = Document({"names": ["anna", "bob"], "empty": []})
    assert matches(doc, (parse_filter("names=a"),)) is False  # bob has no "a"
    assert matches(doc, (parse_filter("names=[ab]"),)) is True
    assert matches(doc, (parse_filter("empty=x"),)) is True
    assert matches(doc, (parse_filter("empty=x"),), strict=True) is False


def test_rejected_and_failing_instances_are_recorded_and_the_rest_goes_on(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    archived_instances(double, archive)
    bad = double.save(
        Document({"$uniqueid": "eeeeeeee-1111-4222-8333-444444444444"}), modified=DAY, event=False
    ).copy()
    bad["type"] = "workitem"  # the workflow refuses a non-snapshot with 406
    archive.store(bad)
    double.wipe()
    double.inject("status", r"^/api/snapshot$", status=503, times=1)
    report = Restorer(archive, client, workers=1).restore_range(WIDE)
    assert report.restored == 3 and len(report.failed) == 2
    assert "not a snapshot" in report.failed["eeeeeeee-1111-4222-8333-444444444444"]
    assert any("503" in why for why in report.failed.values())
    assert len(load_state(archive.backend)["restore.failed"]) == 2
    retry = Restorer(archive, client).restore_range(WIDE)
    assert retry.restored == 1 and retry.skipped == 3


def test_a_workflow_that_is_down_pauses_the_restore(
    double: WorkflowDouble, archive: Archive
) -> None:
    archived_instances(double, archive, instances=2)
    double.wipe()
    port = double.port
    double.stop()
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:
            double.start(port)

    with WorkflowClient(f"http://127.0.0.1:{port}/api", connect_timeout=2) as client:
        report = Restorer(archive, client, workers=1, pause=pause).restore_range(WIDE)
    assert report.restored == 2 and not report.failed
    assert pauses[:3] == [1.0, 2.0, 4.0]


def test_stopped_restore_resumes_and_sends_each_instance_once(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    archived_instances(double, archive, instances=6)
    double.wipe()
    posts: list[str] = []
    original = client.post_snapshot

    def counting(snapshot: Document) -> None:  # type: ignore[override]
        posts.append(str(snapshot.get_first("$uniqueid")))
        original(snapshot)

    client.post_snapshot = counting  # type: ignore[method-assign]
    stop = threading.Event()
    first = Restorer(
        archive,
        client,
        workers=1,
        stop=stop,
        on_progress=lambda r: stop.set() if r.restored >= 2 else None,
    )
    assert first.restore_range(WIDE).stopped
    assert load_state(archive.backend)["restore.status"] == ["stopped"]
    second = Restorer(archive, client, workers=2).restore_range(WIDE)
    assert second.restored == 6  # counted across both runs, as the state keeps it
    assert sorted(posts) == sorted(set(posts)) and len(posts) == 6
    assert len(double.workitems) == 6


def test_dry_run_sends_nothing(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    newest = archived_instances(double, archive, instances=3)
    double.wipe()
    report = Restorer(archive, client).restore_range(WIDE, dry_run=True)
    assert sorted(s for _o, s, _b in report.planned) == sorted(newest.values())
    assert all(size > 0 for _o, _s, size in report.planned)
    assert not double.workitems


def test_one_snapshot_and_one_instance(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    newest = archived_instances(double, archive, instances=2)
    uid = sorted(newest)[0]
    double.wipe()
    restorer = Restorer(archive, client)
    assert restorer.restore_snapshot(newest[uid])
    assert not restorer.restore_snapshot(newest[uid])
    double.wipe()
    report = restorer.restore_instance(uid)
    assert report.restored == 3
    assert double.workitems[uid]["$snapshotid"] == [newest[uid]]
    assert restorer.restore_instance(uid).skipped == 3


def test_restore_from_a_backup_tree(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive, tmp_path: Path
) -> None:
    newest = archived_instances(double, archive, instances=3)
    backup(archive, tmp_path / "bk")
    double.wipe()
    report = restore_files(client, tree_files(tmp_path / "bk"))
    assert (report.restored, report.present, report.failed) == (3, 0, [])
    for uid, snapshot_id in newest.items():
        assert double.workitems[uid]["$snapshotid"] == [snapshot_id]
        assert file_hashes(double.snapshots[snapshot_id]) == file_hashes(archive.load(snapshot_id))
        # as the Java backup service's restore: the sync emits no backup event for it
        marked = double.snapshots[snapshot_id].get_first("$backuprestore")
        assert isinstance(marked, dt.datetime) and marked.tzinfo is not None
    assert restore_files(client, tree_files(tmp_path / "bk")).present == 3


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "America/Adak"])
def test_the_server_time_zone_changes_nothing(
    double: WorkflowDouble, tmp_path: Path, zone: str
) -> None:
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        archived_instances(double, archive, instances=3)
    double.wipe()
    env = {**os.environ, "TZ": zone, "WORKFLOW_SERVICE_ENDPOINT": double.url}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "imixs_archive",
            "restore",
            "--from",
            "2023-11-15",
            "--to",
            "2023-11-15",
            "--dry-run",
            "--data-dir",
            str(store),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    planned = sorted(line.split()[3] for line in lines if line.startswith("would"))
    # 2023-11-15 (UTC) holds step 1 of every instance: the newest inside that day.
    expected = [
        f"{n:08x}-1111-4222-8333-444444444444-"
        f"{int((DAY + dt.timedelta(days=1, hours=n)).timestamp() * 1000)}"
        for n in range(3)
    ]
    assert planned == expected


def test_an_old_format_snapshot_id_is_restored(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    """From an old keyspace: an id of Java's old format without a millis suffix."""
    doc = Document(
        {
            "$uniqueid": "14ad1d2e7ff-2f6e5fa5",
            "$modified": DAY,
            "$created": DAY,
            "type": "snapshot-workitem",
            "subject": "from 2015",
        }
    )
    archive.store(doc)
    assert archive.list_instance("14ad1d2e7ff") == ["14ad1d2e7ff-2f6e5fa5"]
    assert Restorer(archive, client).restore_snapshot("14ad1d2e7ff-2f6e5fa5")
    assert double.snapshots["14ad1d2e7ff-2f6e5fa5"]["subject"] == ["from 2015"]
    report = Restorer(archive, client).restore_range(WIDE)
    assert report.failed == {}


def test_a_range_of_decades_walks_only_the_days_with_snapshots(
    double: WorkflowDouble,
    client: WorkflowClient,
    archive: Archive,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1970 to 2100 holds 47,000 days; the progress is saved once per day with snapshots
    (three here) and once at the end, not once per calendar day."""
    archived_instances(double, archive)
    double.wipe()
    saves: list[object] = []
    real_save = archive.state.save
    monkeypatch.setattr(archive.state, "save", lambda state: (saves.append(1), real_save(state)))
    decades = RestoreRange(
        dt.datetime(1970, 1, 1, tzinfo=dt.UTC), dt.datetime(2100, 1, 1, tzinfo=dt.UTC)
    )
    report = Restorer(archive, client).restore_range(decades)
    assert report.restored == 4 and len(saves) == 3 + 1


def _without(doc: Document, name: str) -> Document:
    out = doc.copy()
    out.pop(name, None)
    return out
