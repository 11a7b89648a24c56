"""``imixs-archive doctor``, and the call it prepares: the workflow reading a file back
through ``/api/archive/md5`` with the reader account doctor names (as the Java
``ArchiveRemoteService.loadFileFromArchive`` does), over real HTTP."""

from __future__ import annotations

import hashlib
import io
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from imixs_archive.cli import main
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.workflow_double import WorkflowDouble
from web.live import BIG, PASSWORDS, LiveServer, credentials_env


@pytest.fixture
def basic_double() -> Iterator[WorkflowDouble]:
    with WorkflowDouble(auth="BASIC", user="archive", password="s3cret") as running:
        yield running


def doctor(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    *args: str,
    stdin: str = "",
) -> tuple[int, str]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["doctor", *args])
    return code, capsys.readouterr().out


def workflow_env(double: WorkflowDouble, password: str = "s3cret") -> dict[str, str]:
    return {
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
        "WORKFLOW_SERVICE_USER": "archive",
        "WORKFLOW_SERVICE_PASSWORD": password,
        "WORKFLOW_SERVICE_AUTHMETHOD": "BASIC",
    }


def test_doctor_names_what_the_workflow_needs_and_that_call_works(
    live: LiveServer,
    basic_double: WorkflowDouble,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = {**credentials_env(), **workflow_env(basic_double)}
    SQLiteBackend(tmp_path / "store").close()  # doctor finds an archive; it creates none
    code, out = doctor(
        monkeypatch,
        capsys,
        env,
        "--data-dir",
        str(tmp_path / "store"),
        "--public-url",
        live.url,
        "--archive-user",
        "rex",
        "--archive-password-stdin",
        stdin=PASSWORDS["rex"] + "\n",
    )
    assert code == 0, out
    assert re.search(r"ok  store: reachable", out)
    assert re.search(rf"ok  workflow: {re.escape(basic_double.url)} answers archive \(BASIC\)", out)
    assert "ok  archive access: 'rex' may read files (reader; password checked)" in out
    settings = dict(re.findall(r"^  (ARCHIVE_SERVICE_\w+)=(.*)$", out, re.MULTILINE))
    assert settings["ARCHIVE_SERVICE_ENDPOINT"] == f"{live.url}/api"
    assert settings["ARCHIVE_SERVICE_USER"] == "rex"
    assert settings["ARCHIVE_SERVICE_AUTHMETHOD"] == "BASIC"

    # the workflow's ArchiveRemoteService.loadFileFromArchive, with what doctor said
    md5 = hashlib.md5(BIG).hexdigest().upper()  # the md5checksum attribute Imixs writes
    url = f"{settings['ARCHIVE_SERVICE_ENDPOINT']}/archive/md5/{md5}"
    headers = {"Accept": "application/octet-stream"}
    answer = httpx.get(url, headers=headers, auth=("rex", PASSWORDS["rex"]), timeout=30)
    assert answer.status_code == 200 and answer.content == BIG
    refused = httpx.get(url, headers=headers, auth=("rex", "wrong"), timeout=30)
    assert refused.status_code == 401


def test_doctor_fails_on_wrong_workflow_credentials_and_wrong_reader_password(
    basic_double: WorkflowDouble,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = {**credentials_env(), **workflow_env(basic_double, password="wrong")}
    code, out = doctor(
        monkeypatch,
        capsys,
        env,
        "--data-dir",
        str(tmp_path / "store"),
        "--archive-user",
        "rex",
        "--archive-password-stdin",
        stdin="not-the-password\n",
    )
    assert code == 1
    assert "FAIL  workflow:" in out and "check WORKFLOW_SERVICE_USER" in out
    assert "FAIL  archive access: the password given for 'rex' is wrong" in out


def test_doctor_without_workflow_or_credentials_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    code, out = doctor(
        monkeypatch,
        capsys,
        {"WORKFLOW_SERVICE_ENDPOINT": f"http://127.0.0.1:{port}/api", "BACKUP_FTP_HOST": "ftp"},
        "--data-dir",
        str(tmp_path / "store"),
    )
    assert code == 1
    assert f"FAIL  workflow: cannot reach http://127.0.0.1:{port}/api" in out
    assert "warn  archive access: no credentials are configured" in out
    assert "ARCHIVE_SERVICE_USER=<a reader of ARCHIVE_USERS>" in out
    assert "warn  configuration: BACKUP_FTP_HOST is set but BACKUP_SERVICE_ENDPOINT" in out


def test_doctor_names_the_java_settings_it_does_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"EXPORT_PATH": "/exports", "TZ": "Europe/Berlin"}
    _code, out = doctor(monkeypatch, capsys, env, "--data-dir", str(tmp_path / "store"))
    assert "warn  configuration: EXPORT_PATH is set but not read here" in out
    assert "warn  configuration: TZ=Europe/Berlin is set" in out


def test_doctor_on_a_backup_only_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """BACKUP_ONLY: the workflow emits snapshot.backup itself, so no warning that the sync
    emits none; BACKUP_ONLY without an FTPS host is one."""
    env = {"BACKUP_FTP_HOST": "ftp", "BACKUP_ONLY": "true"}
    _code, out = doctor(monkeypatch, capsys, env, "--data-dir", str(tmp_path / "a"))
    assert "BACKUP_SERVICE_ENDPOINT is not" not in out
    monkeypatch.delenv("BACKUP_FTP_HOST")
    _code, out = doctor(
        monkeypatch, capsys, {"BACKUP_ONLY": "true"}, "--data-dir", str(tmp_path / "b")
    )
    assert "warn  configuration: BACKUP_ONLY is set but BACKUP_FTP_HOST is not" in out


def test_doctor_warns_about_the_weaker_ftps_choices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Java's way to connect (clear data, the dates-only check), each named; none by default."""
    env = {"BACKUP_FTP_HOST": "ftp", "BACKUP_ONLY": "true"}
    _code, out = doctor(monkeypatch, capsys, env, "--data-dir", str(tmp_path / "a"))
    assert "BACKUP_FTP_PROTECT_DATA" not in out and "BACKUP_FTP_CERTIFICATE_CHECK" not in out
    env = {"BACKUP_FTP_PROTECT_DATA": "false", "BACKUP_FTP_CERTIFICATE_CHECK": "dates"}
    _code, out = doctor(monkeypatch, capsys, env, "--data-dir", str(tmp_path / "b"))
    assert "warn  configuration: BACKUP_FTP_PROTECT_DATA=false: the FTPS data" in out
    assert "warn  configuration: BACKUP_FTP_CERTIFICATE_CHECK=dates: the FTPS server's" in out
    monkeypatch.setenv("BACKUP_FTP_CERTIFICATE_CHECK", "host")
    code, out = doctor(monkeypatch, capsys, {}, "--data-dir", str(tmp_path / "c"))
    assert code == 2
