"""The FTPS backup target against a real FTPS server on loopback (pyftpdlib, TLS on control
and data connections), with the workflow test double over real HTTP: the Java backup
service's layout, its events, restore with ``$backuprestore``, and a server that drops the
connection midway."""

from __future__ import annotations

import datetime as dt
import ftplib
import socket
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.document.conventions import origin_id
from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.errors import ArchiveError, ConfigError, TargetUnavailableError
from imixs_archive.recovery.backup import backup
from imixs_archive.recovery.backup_events import BackupEvents
from imixs_archive.recovery.backup_ftps import backup_to_ftps, ftps_files
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget
from imixs_archive.recovery.restore_files import restore_files
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.workflow.client import WorkflowClient
from support.backup_rig import BackupRig
from support.ftps_server import PASSWORD, FtpsServer
from support.restore_data import archived_instances, file_hashes
from support.snapshots import make_snapshot
from support.workflow_double import WorkflowDouble
from web.live import serve_store


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def test_same_layout_and_bytes_as_the_local_backup(
    double: WorkflowDouble, archive: Archive, target: FtpsTarget, ftps: FtpsServer, tmp_path: Path
) -> None:
    newest = archived_instances(double, archive)
    summary = backup_to_ftps(archive, target)
    assert (summary.written, summary.current, summary.failed) == (4, 0, 0)
    backup(archive, tmp_path / "local")
    remote = tree(ftps.root / "backup")
    assert remote == tree(tmp_path / "local")
    assert sorted(remote) == sorted(f"2023/11/{uid}.xml" for uid in newest)  # yyyy/MM/<uid>.xml
    for uid, snapshot_id in newest.items():
        assert read_xml_document(remote[f"2023/11/{uid}.xml"]) == archive.load(snapshot_id)


def test_no_overwrite_unless_asked(
    double: WorkflowDouble, archive: Archive, target: FtpsTarget
) -> None:
    archived_instances(double, archive)
    backup_to_ftps(archive, target)
    again = backup_to_ftps(archive, target)
    assert (again.written, again.current) == (0, 4)
    asked = backup_to_ftps(archive, target, overwrite=True)
    assert (asked.written, asked.current) == (4, 0)


def test_a_java_written_file_is_replaced(
    double: WorkflowDouble, archive: Archive, target: FtpsTarget, ftps: FtpsServer
) -> None:
    newest = archived_instances(double, archive, instances=1)
    (uid,) = newest
    java = ftps.root / "backup" / "2023" / "11" / f"{uid}.xml"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"<document/>")  # not recorded: the Java backup service wrote it
    assert backup_to_ftps(archive, target).written == 1
    assert read_xml_document(java.read_bytes())["$uniqueid"] == [newest[uid]]


def test_backup_events_go_to_the_ftps_tree_and_restore_comes_back(rig: BackupRig) -> None:
    double, client = rig.double, rig.client
    newest = rig.archived()
    for snapshot_id in newest.values():
        client.put_event("snapshot.backup", snapshot_id)
    client.put_event("snapshot.backup.mirror2", next(iter(newest.values())))
    done = rig.events().run_round()
    assert (done.written, done.failed) == (4, [])
    topics = sorted(entry.topic for entry in double.log.values())
    assert topics == ["snapshot.backup.mirror2"]  # the mirror's event is another consumer's
    assert len(tree(rig.ftps.root / "backup")) == 4

    before = {uid: file_hashes(rig.archive.load(sid)) for uid, sid in newest.items()}
    double.wipe()
    report = restore_files(client, ftps_files(rig.target))
    assert (report.restored, report.present, report.failed) == (4, 0, [])
    for uid, snapshot_id in newest.items():
        restored = double.snapshots[snapshot_id]
        assert file_hashes(restored) == before[uid]
        assert restored.get_first("$backuprestore") is not None  # as the Java restore
        assert double.workitems[uid]["$snapshotid"] == [snapshot_id]
    assert restore_files(client, ftps_files(rig.target)).present == 4


def test_a_dropped_upload_leaves_the_event_and_no_partial_file(rig: BackupRig) -> None:
    double, ftps = rig.double, rig.ftps
    newest = rig.archived(instances=2)
    for snapshot_id in newest.values():
        rig.client.put_event("snapshot.backup", snapshot_id)
    ftps.faults.drop_after = 50_000  # every file is larger
    events = rig.events()
    done = events.run_round()
    assert done.written == 0 and len(done.failed) == 1 and ftps.faults.drops >= 1
    assert len(double.log) == 2  # nothing lost: both events wait
    assert not [p for p in (ftps.root / "backup").rglob("*.xml")]  # only .part, if anything
    # what the dropped uploads left is in a folder, never a file of a month folder (the
    # Java restore reads each file of a month folder, and a .part would stop it)
    months = [m for m in (ftps.root / "backup").glob("*/*") if m.is_dir()]
    assert months and all(not f.is_file() for m in months for f in m.iterdir())
    assert any((m / ".imixs-archive-upload").glob("*.part") for m in months)
    ftps.faults.drop_after = None
    done = events.run_round()
    assert (done.written, done.failed, len(double.log)) == (2, [], 0)
    rig.assert_backed_up(newest)


def test_a_dropped_download_fails_that_file_and_the_restore_goes_on(rig: BackupRig) -> None:
    double, client, target = rig.double, rig.client, rig.target
    newest = rig.archived(instances=3)
    backup_to_ftps(rig.archive, target)
    double.wipe()
    sizes = sorted(p.stat().st_size for p in (rig.ftps.root / "backup").rglob("*.xml"))
    rig.ftps.faults.drop_after = sizes[-1] - 1  # only the largest file is cut
    report = restore_files(client, ftps_files(target))
    assert report.restored == 2 and len(report.failed) == 1
    assert "FTPS" in report.failed[0]
    rig.ftps.faults.drop_after = None
    again = restore_files(client, ftps_files(target))
    assert (again.restored, again.present, again.failed) == (1, 2, [])
    assert sorted(double.workitems) == sorted(newest)


def test_a_target_gone_for_good_stops_the_restore_saying_how_far_it_came(
    rig: BackupRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not one identical failure per file: after the first file no new connection can be
    had, and the restore stops there."""
    double, client, target = rig.double, rig.client, rig.target
    rig.archived(instances=3)
    backup_to_ftps(rig.archive, target)
    double.wipe()

    def refused(self: ftplib.FTP_TLS, *args: object, **kwargs: object) -> str:
        raise ConnectionRefusedError("refused")

    def gone(report: object) -> None:
        target.close()  # the next file needs a new connection
        monkeypatch.setattr(ftplib.FTP_TLS, "connect", refused)

    with pytest.raises(TargetUnavailableError, match=r"restore stopped: 1 restored before it"):
        restore_files(client, ftps_files(target), on_progress=gone)
    assert len(double.workitems) == 1


def test_wrong_password_and_untrusted_certificate_are_clear_errors(ftps: FtpsServer) -> None:
    settings = load_settings({"BACKUP_FTP_CAFILE": str(ftps.cafile)})
    wrong = FtpsLocation.from_settings(settings, ftps.url().replace("backup@", "backup:no@"))
    with FtpsTarget(wrong) as target, pytest.raises(ArchiveError, match="FTPS ftps://backup@"):
        list(target.backup_files())
    untrusted = FtpsLocation.from_settings(
        load_settings({"BACKUP_FTP_PASSWORD": PASSWORD}), ftps.url()
    )
    untrusted_says = (
        r"certificate failed the check \(self-signed certificate\); set BACKUP_FTP_CAFILE"
    )
    with FtpsTarget(untrusted) as target, pytest.raises(ArchiveError, match=untrusted_says):
        list(target.backup_files())


def test_the_commands(
    double: WorkflowDouble,
    ftps: FtpsServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """backup ftps://..., backup-events --once (BACKUP_FTP_*), restore --source ftps://..."""
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        newest = archived_instances(double, archive, instances=2)
    for name, value in {
        **ftps.env("/events"),
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
    }.items():
        monkeypatch.setenv(name, value)
    (ftps.root / "events").mkdir()
    assert main(["backup", ftps.url(), "--data-dir", str(store)]) == 0
    assert "2 written, 0 already current, 0 failed" in capsys.readouterr().out
    for snapshot_id in newest.values():
        double.put_event("snapshot.backup", snapshot_id)
    assert main(["backup-events", "--once", "--data-dir", str(store)]) == 0
    assert "2 written" in capsys.readouterr().out and not double.log
    assert len(tree(ftps.root / "events")) == 2
    double.wipe()
    assert main(["restore", "--source", ftps.url("/events"), "--data-dir", str(store)]) == 0
    assert "2 restored, 0 already in the workflow, 0 failed" in capsys.readouterr().out
    assert sorted(double.workitems) == sorted(newest)


def test_a_dry_run_from_ftps_sends_nothing(
    double: WorkflowDouble,
    ftps: FtpsServer,
    target: FtpsTarget,
    archive: Archive,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    archived_instances(double, archive, instances=2)
    backup_to_ftps(archive, target)
    double.wipe()
    monkeypatch.setenv("BACKUP_FTP_PASSWORD", PASSWORD)
    monkeypatch.setenv("BACKUP_FTP_CAFILE", str(ftps.cafile))
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", double.url)
    store = str(tmp_path / "store")
    assert main(["restore", "--source", ftps.url(), "--dry-run", "--data-dir", store]) == 0
    assert double.stats.posts == 0 and not double.workitems
    assert "2 would be restored, 0 already in the workflow" in capsys.readouterr().out


def serve_backs_up_a_save(
    double: WorkflowDouble, tmp_path: Path, url: str, env: dict[str, str], folder: Path
) -> str:
    """The workflow saves one instance with a file, ``serve`` (its sync emitting
    snapshot.backup to ``url``, its backup consumer writing with ``env``) archives it and
    writes it into ``folder``, the event deleted; the snapshot's id."""
    serve_env = {
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
        "WORKFLOW_SYNC_INITIALDELAY": "0",
        "WORKFLOW_SYNC_INTERVAL": "100",
        "BACKUP_SERVICE_ENDPOINT": url,
        **env,
    }
    snapshot = double.save(
        Document({"$uniqueid": "0badcafe-1111-4222-8333-444444444444", "subject": "x"}),
        files={"a.pdf": b"%PDF" * 1000},
    )
    snapshot_id = str(snapshot.get_first("$uniqueid"))
    with contextmanager(serve_store)(tmp_path, serve_env) as live:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (double.log or not live.archive.exists(snapshot_id)):
            time.sleep(0.1)
        assert not double.log, [entry.topic for entry in double.log.values()]
        (path,) = folder.rglob("0badcafe-*.xml")
        assert read_xml_document(path.read_bytes()) == live.archive.load(snapshot_id)
    return snapshot_id


def test_serve_backs_up_what_the_sync_archives(
    double: WorkflowDouble, ftps: FtpsServer, tmp_path: Path
) -> None:
    """The whole way, as with the Java backup service retired: the workflow saves, the sync
    archives and emits snapshot.backup (BACKUP_SERVICE_ENDPOINT set), and the service's
    backup-events thread writes the snapshot to the FTPS tree and deletes the event."""
    serve_backs_up_a_save(double, tmp_path, ftps.url(), ftps.env(), ftps.root / "backup")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_target_stops_the_backup_at_the_first_failure(
    double: WorkflowDouble,
    archive: Archive,
    client: WorkflowClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not one identical failure per instance: one message, and the events stay."""
    newest = archived_instances(double, archive, instances=3)
    url = f"ftps://backup@127.0.0.1:{_closed_port()}/backup"
    unreachable = FtpsLocation.from_settings(load_settings({}), url)
    connects: list[object] = []
    real_connect = ftplib.FTP_TLS.connect

    def counted(self: ftplib.FTP_TLS, *args: object, **kwargs: object) -> str:
        connects.append(args)
        return real_connect(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ftplib.FTP_TLS, "connect", counted)
    with FtpsTarget(unreachable) as target:
        with pytest.raises(TargetUnavailableError, match=r"backup stopped: 0 written"):
            backup_to_ftps(archive, target)
        assert len(connects) == 1
        for snapshot_id in newest.values():
            client.put_event("snapshot.backup", snapshot_id)
        done = BackupEvents(archive, client, target).run_round()
        assert done.written == 0 and len(done.failed) == 1 and len(double.log) == 3
    assert len(connects) == 2

    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as copy:
        archived_instances(double, copy, instances=3)
    capsys.readouterr()
    assert main(["backup", url, "--data-dir", str(store)]) == 6
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "backup stopped" in captured.err, captured.err
    assert captured.err.startswith(f"imixs-archive: FTPS {url}: ")


def test_month_folders_in_the_java_jvm_s_zone(archive: Archive, ftps: FtpsServer) -> None:
    """BACKUP_FTP_TIMEZONE: an instance created on 31 January 23:30 UTC is in 2024/02 for a
    Java backup service running in Europe/Berlin, and here too once the zone is set;
    without it, the offset $created carries decides (2024/01)."""
    created = dt.datetime(2024, 1, 31, 23, 30, tzinfo=dt.UTC)
    doc = make_snapshot(0, dollar_created=created, modified=created)
    archive.store(doc)
    origin = origin_id(str(doc.get_first("$uniqueid")))
    found = {}
    for zone in ("", "Europe/Berlin"):
        settings = load_settings(
            {
                "BACKUP_FTP_PASSWORD": PASSWORD,
                "BACKUP_FTP_CAFILE": str(ftps.cafile),
                "BACKUP_FTP_TIMEZONE": zone,
            }
        )
        with FtpsTarget(FtpsLocation.from_settings(settings, ftps.url())) as target:
            assert backup_to_ftps(archive, target).written == 1
        found[zone] = sorted(tree(ftps.root / "backup"))
    assert found[""] == [f"2024/01/{origin}.xml"]
    assert found["Europe/Berlin"] == [f"2024/01/{origin}.xml", f"2024/02/{origin}.xml"]
    with pytest.raises(ConfigError, match="BACKUP_FTP_TIMEZONE"):
        load_settings({"BACKUP_FTP_TIMEZONE": "Mars/Olympus"})
