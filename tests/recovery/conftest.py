"""Fixtures of the recovery tests: a real FTPS server on loopback, a target on it (the
FTPS backup's), a workflow client of the test double (every test that restores or
reads events), and the rig that holds them with the archive."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget
from imixs_archive.workflow.client import WorkflowClient
from support.backup_rig import BackupRig
from support.ftps_server import PASSWORD, FtpsServer, serve
from support.workflow_double import WorkflowDouble


@pytest.fixture
def ftps(tmp_path: Path) -> Iterator[FtpsServer]:
    yield from serve(tmp_path)


@pytest.fixture
def target(ftps: FtpsServer) -> Iterator[FtpsTarget]:
    settings = load_settings(
        {"BACKUP_FTP_PASSWORD": PASSWORD, "BACKUP_FTP_CAFILE": str(ftps.cafile)}
    )
    with FtpsTarget(FtpsLocation.from_settings(settings, ftps.url())) as opened:
        yield opened


@pytest.fixture
def client(double: WorkflowDouble) -> Iterator[WorkflowClient]:
    with WorkflowClient(double.url, read_timeout=10) as opened:
        yield opened


@pytest.fixture
def rig(
    double: WorkflowDouble,
    archive: Archive,
    client: WorkflowClient,
    target: FtpsTarget,
    ftps: FtpsServer,
) -> BackupRig:
    return BackupRig(double, archive, client, target, ftps)
