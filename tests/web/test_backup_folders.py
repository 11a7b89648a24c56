"""A folder named over the web stays inside ``ARCHIVE_BACKUP_DIR``: the API's and the UI's
backup, and a restore from files, refuse any other folder of the server (absolute, ``..``,
the root, a symbolic link leading out) and write nothing there; folders inside it work."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from web.live import LiveServer
from web.test_api_jobs import wait_for


def outside_folders(live: LiveServer, tmp_path: Path) -> list[str]:
    outside = tmp_path / "outside"
    outside.mkdir()
    link = live.settings.backup_dir / "leads-out"
    live.settings.backup_dir.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(outside, target_is_directory=True)
    return [str(outside), "/", "../outside", "leads-out", "leads-out/deeper", "nested/../../x"]


def start_ui_backup(client: httpx.Client, folder: str) -> str:
    page = client.post("/ui/actions/backup", data={"folder": folder})
    assert page.status_code == 200 and page.url.path == "/ui/backup"
    return page.text


@pytest.fixture
def refused(live: LiveServer, tmp_path: Path) -> list[str]:
    folders = outside_folders(live, tmp_path)
    yield folders
    assert not list((tmp_path / "outside").iterdir())  # nothing was written outside
    assert not Path("/x").exists()


def test_the_api_backup_refuses_folders_outside(live: LiveServer, refused: list[str]) -> None:
    with live.client("manager") as client:
        for folder in refused:
            answer = client.post("/api/backup", json={"folder": folder})
            assert answer.status_code == 400, folder
            assert "outside the backup folder" in answer.json()["message"], folder


def test_the_ui_backup_refuses_folders_outside(live: LiveServer, refused: list[str]) -> None:
    with live.client("manager", follow_redirects=True) as client:
        for folder in refused:
            assert "outside the backup folder" in start_ui_backup(client, folder), folder
        assert client.get("/api/backup").json().get("state") != "running"


def test_a_restore_from_files_refuses_folders_outside(live: LiveServer, refused: list[str]) -> None:
    with live.client("manager") as client:
        for folder in refused[:3]:
            answer = client.post("/api/restore/source", json={"path": folder})
            assert answer.status_code == 400, folder
            assert "outside the backup folder" in answer.json()["message"], folder


@pytest.mark.parametrize("inside", ["nested/deeper", "{base}/absolute-inside"])
def test_folders_inside_take_a_backup_from_the_api_and_the_ui(
    live: LiveServer, inside: str
) -> None:
    folder = inside.format(base=live.settings.backup_dir)
    target = (live.settings.backup_dir / folder).resolve()
    with live.client("manager", follow_redirects=True) as client:
        assert "backup started" in start_ui_backup(client, folder)
        status = wait_for(client, "/api/backup")
        assert status["state"] == "finished", status
        assert Path(status["result"]["target"]) == target
        assert list(target.rglob("*.xml"))
        started = client.post("/api/backup", json={"folder": folder})
        assert started.status_code == 202, started.text
        assert wait_for(client, "/api/backup")["state"] == "finished"
