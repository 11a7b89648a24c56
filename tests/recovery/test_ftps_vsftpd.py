"""The FTPS target against a real vsftpd (Debian's, ``support/vsftpd.py``), which requires
each protected data connection to resume the control connection's TLS session
(``require_ssl_reuse=YES``, its default), as ProFTPD's mod_tls does; and against one set up
as for the Java backup service (data connections may be in clear, a certificate whose host
name is not the one connected to). Without vsftpd these tests fail, never skip."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.recovery.backup import backup
from imixs_archive.recovery.backup_ftps import backup_to_ftps, ftps_files
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget
from imixs_archive.recovery.ftps_manifest import MANIFEST, RECORD
from imixs_archive.recovery.restore_files import restore_files
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.workflow.client import WorkflowClient
from recovery.test_backup_ftps import serve_backs_up_a_save, tree
from support.restore_data import archived_instances
from support.vsftpd import AS_FOR_JAVA, STRICT, Vsftpd, run_vsftpd
from support.workflow_double import WorkflowDouble

CLEAR_DATA = {"BACKUP_FTP_PROTECT_DATA": "false"}


@pytest.fixture(scope="session")
def strict() -> Iterator[Vsftpd]:
    """Protected data connections required, each resuming the session."""
    yield from run_vsftpd(STRICT, ())


@pytest.fixture(scope="session")
def for_java() -> Iterator[Vsftpd]:
    """As for the Java backup service: clear data connections allowed, and a certificate
    for ftp.example.org on 127.0.0.1."""
    yield from run_vsftpd(AS_FOR_JAVA, ("ftp.example.org",))


def location(server: Vsftpd, path: str, **env: str) -> FtpsLocation:
    return FtpsLocation.from_settings(load_settings(server.env(path, **env)))


def set_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def test_a_backup_writes_to_vsftpd_requiring_session_reuse(
    double: WorkflowDouble, archive: Archive, strict: Vsftpd, tmp_path: Path
) -> None:
    """Each data connection (the uploads, the record, the listings) resumes the session;
    without it vsftpd answers "522 SSL connection failed: session reuse required"."""
    folder = strict.folder("reuse")
    newest = archived_instances(double, archive)
    with FtpsTarget(location(strict, "/reuse")) as target:
        summary = backup_to_ftps(archive, target)
        assert (summary.written, summary.failed, summary.failures) == (4, 0, [])
        listed = list(target.backup_files())
        control = target._session().sock
        assert isinstance(control, ssl.SSLSocket)
        assert control.version() == "TLSv1.3"  # its session tickets are resumed too
    with FtpsTarget(location(strict, "/reuse")) as again:  # the record read back
        assert backup_to_ftps(archive, again).current == 4
    backup(archive, tmp_path / "local")
    assert tree(folder) == tree(tmp_path / "local")
    assert listed == sorted(f"2023/11/{uid}.xml" for uid in newest)


def test_a_server_set_up_for_java_takes_the_backup_with_java_s_settings(
    double: WorkflowDouble,
    for_java: Vsftpd,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Clear data connections and the dates-only check, as the Java backup service
    connects: written, each weaker choice warned about."""
    folder = for_java.folder("java")
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        newest = archived_instances(double, archive, instances=2)
    set_env(monkeypatch, for_java.env("/java", BACKUP_FTP_CERTIFICATE_CHECK="dates", **CLEAR_DATA))
    monkeypatch.delenv("BACKUP_FTP_CAFILE")  # as Java: no CA to trust
    capsys.readouterr()
    assert main(["backup", for_java.url("/java"), "--data-dir", str(store)]) == 0
    out, err = capsys.readouterr()
    assert "2 written, 0 already current, 0 failed" in out
    warned = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 2, err
    assert "BACKUP_FTP_PROTECT_DATA=false" in warned[0] and "in clear" in warned[0]
    assert "BACKUP_FTP_CERTIFICATE_CHECK=dates" in warned[1]
    assert sorted(tree(folder)) == sorted(f"2023/11/{uid}.xml" for uid in newest)


def test_serve_backs_up_events_to_it_and_restore_reads_it_back(
    double: WorkflowDouble,
    for_java: Vsftpd,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The service's backup of snapshot.backup events to the server set up for Java
    (clear data, the host name unchecked), then ``restore --source ftps://`` from it."""
    folder = for_java.folder("events")
    env = for_java.env("/events", BACKUP_FTP_CERTIFICATE_CHECK="chain", **CLEAR_DATA)
    snapshot_id = serve_backs_up_a_save(double, tmp_path, for_java.url("/events"), env, folder)
    double.wipe()
    set_env(monkeypatch, {**env, "WORKFLOW_SERVICE_ENDPOINT": double.url})
    capsys.readouterr()
    source = for_java.url("/events")
    assert main(["restore", "--source", source, "--data-dir", str(tmp_path / "other")]) == 0
    out, err = capsys.readouterr()
    assert "1 restored, 0 already in the workflow, 0 failed" in out
    assert "warning: BACKUP_FTP_CERTIFICATE_CHECK=chain" in err
    assert double.snapshots[snapshot_id].get_first("$backuprestore") is not None


def test_the_certificate_checks_and_data_protection(
    double: WorkflowDouble,
    for_java: Vsftpd,
    strict: Vsftpd,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for_java.folder("checks")
    strict.folder("clear")
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        archived_instances(double, archive, instances=1)
    set_env(monkeypatch, for_java.env("/checks"))
    url = for_java.url("/checks")

    def run(**env: str) -> tuple[int, str]:
        set_env(monkeypatch, env)
        capsys.readouterr()
        code = main(["backup", url, "--data-dir", str(store), "--overwrite"])
        return code, capsys.readouterr().err

    # full (the default): the CA is trusted, but the certificate is for ftp.example.org
    code, err = run()
    assert code == 6 and err.count("\n") == 1, err
    assert "the server's certificate is not for this host name (IP address mismatch" in err
    assert "BACKUP_FTP_CERTIFICATE_CHECK=chain" in err
    # chain: written (data protected, the session resumed), warned about
    code, err = run(BACKUP_FTP_CERTIFICATE_CHECK="chain")
    assert code == 0 and err.startswith("warning: BACKUP_FTP_CERTIFICATE_CHECK=chain"), err
    # chain still checks the chain: without the CA, a self-signed certificate is refused
    monkeypatch.delenv("BACKUP_FTP_CAFILE")
    code, err = run()
    assert code == 6 and "failed the check (self-signed certificate)" in err, err
    code, err = run(BACKUP_FTP_CERTIFICATE_CHECK="dates")  # any issuer, as Java
    assert code == 0 and "BACKUP_FTP_CERTIFICATE_CHECK=dates" in err, err
    # data in clear is sent as PROT C: the strict server refuses it, the Java one took it
    set_env(monkeypatch, strict.env("/clear", **CLEAR_DATA))
    url = strict.url("/clear")
    code, err = run(BACKUP_FTP_CERTIFICATE_CHECK="full")
    assert code == 1 and "522 Data connections must be encrypted" in err, err


def test_the_dates_check_refuses_an_expired_certificate(
    double: WorkflowDouble,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The Java check: any issuer, but within its dates; refused before the password is
    sent (a one-line error, exit 6)."""
    store = tmp_path / "store"
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        archived_instances(double, archive, instances=1)
    with contextmanager(run_vsftpd)(AS_FOR_JAVA, ("ftp.example.org",), expired=True) as old:
        old.folder("old")
        set_env(monkeypatch, old.env("/old", BACKUP_FTP_CERTIFICATE_CHECK="dates"))
        capsys.readouterr()
        assert main(["backup", old.url("/old"), "--data-dir", str(store)]) == 6
        err = capsys.readouterr().err.splitlines()
        assert err[0].startswith("warning: BACKUP_FTP_CERTIFICATE_CHECK=dates")
        assert len(err) == 2 and "the server's certificate expired on " in err[1], err
        assert not list((old.root / "old").iterdir())


def test_the_record_is_compacted_on_vsftpd(
    double: WorkflowDouble, archive: Archive, strict: Vsftpd
) -> None:
    """Written again and again, the record stays one line per file: the live log is
    rotated into the record's folder and merged there (renames across folders, SIZE,
    listings of a dot folder on vsftpd)."""
    folder = strict.folder("record")
    newest = archived_instances(double, archive, instances=3)
    where = location(strict, "/record")
    for _round in range(4):
        with FtpsTarget(where, compact_at=5) as target:
            assert backup_to_ftps(archive, target, overwrite=True).written == 3
    live = folder / MANIFEST
    lines = live.read_text().splitlines() if live.exists() else []
    segments = sorted(p.name for p in (folder / RECORD).iterdir())
    assert len(segments) == 1 and segments[0].endswith("+"), segments
    merged = (folder / RECORD / segments[0]).read_text().splitlines()
    assert len(merged) + len(lines) <= 2 * 3 + 5
    with FtpsTarget(where) as fresh:
        assert fresh.held() == {
            f"2023/11/{uid}.xml": snapshot_id for uid, snapshot_id in newest.items()
        }
        assert backup_to_ftps(archive, fresh).current == 3


def test_a_restore_reads_the_whole_tree_over_resumed_sessions(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient, strict: Vsftpd
) -> None:
    strict.folder("restore")
    newest = archived_instances(double, archive, instances=3)
    with FtpsTarget(location(strict, "/restore")) as target:
        backup_to_ftps(archive, target)
        double.wipe()
        report = restore_files(client, ftps_files(target))
    assert (report.restored, report.failed) == (3, [])
    assert sorted(double.workitems) == sorted(newest)
