"""What a test of the FTPS backup and of the backup of events works with: the workflow
test double, the archive beside it, a client of the double over real HTTP, and an FTPS
target with its server on loopback (the ``rig`` fixture of ``tests/recovery``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.recovery.backup_events import BackupEvents
from imixs_archive.recovery.ftps import FtpsTarget
from imixs_archive.workflow.client import WorkflowClient
from support.ftps_server import FtpsServer
from support.restore_data import archived_instances
from support.workflow_double import WorkflowDouble


def backed_up(ftps: FtpsServer, uid: str) -> Document:
    """The backup file of one process instance on the FTPS server."""
    (path,) = (ftps.root / "backup").rglob(f"{uid}.xml")
    return read_xml_document(path.read_bytes())


@dataclass
class BackupRig:
    double: WorkflowDouble
    archive: Archive
    client: WorkflowClient
    target: FtpsTarget
    ftps: FtpsServer

    def archived(self, instances: int = 4) -> dict[str, str]:
        """Instances in the workflow and the archive: ``{uid: newest snapshot id}``."""
        return archived_instances(self.double, self.archive, instances=instances)

    def events(self, **options: Any) -> BackupEvents:
        """A consumer of backup events into the target, with the archive beside."""
        return BackupEvents(self.archive, self.client, self.target, **options)

    def assert_backed_up(self, newest: Mapping[str, str]) -> None:
        """Each instance's backup file holds its snapshot as the archive has it."""
        for uid, snapshot_id in newest.items():
            assert backed_up(self.ftps, uid) == self.archive.load(snapshot_id)
