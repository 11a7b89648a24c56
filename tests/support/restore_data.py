"""Archived process instances that the workflow double then loses: the starting point of
every restore test."""

from __future__ import annotations

import datetime as dt
import hashlib
import random

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import iter_files
from imixs_archive.document.model import Document
from support.workflow_double import WorkflowDouble

DAY = dt.datetime(2023, 11, 14, 9, 0, tzinfo=dt.UTC)


def archived_instances(
    double: WorkflowDouble,
    archive: Archive,
    instances: int = 4,
    *,
    seed: int = 5,
    day: dt.datetime = DAY,
) -> dict[str, str]:
    """``instances`` process instances, 3 steps each on 3 days (step n at ``day`` + n days
    + instance hours), saved in the double and archived; returns uid -> newest snapshot.
    Subjects alternate "Ticket A<n>"/"Ticket B<n>"; instance 2 is in group "Invoice"."""
    rng = random.Random(seed)
    newest: dict[str, str] = {}
    for number in range(instances):
        uid = f"{number:08x}-1111-4222-8333-444444444444"
        files = {"scan.pdf": rng.randbytes(rng.randint(1000, 300_000))}
        for step in range(3):
            if step == 2:
                files[f"note-{number}.txt"] = f"note {number}".encode()
            item = {
                "$uniqueid": uid,
                "subject": f"Ticket {'AB'[number % 2]}{number}",
                "$taskid": 1000 + step,
                "$workflowgroup": "Invoice" if number == 2 else "Ticket",
            }
            snapshot = double.save(
                Document(item),
                files=dict(files),
                modified=day + dt.timedelta(days=step, hours=number),
                event=False,
            )
            archive.store(snapshot.copy())
            newest[uid] = str(snapshot.get_first("$uniqueid"))
    return newest


def file_hashes(doc: Document) -> dict[str, str]:
    """File name -> SHA-256 of its bytes, held or streamed."""
    return {
        entry.name: hashlib.sha256(
            entry.content if isinstance(entry.content, bytes) else entry.content.read_all()
        ).hexdigest()
        for entry in iter_files(doc)
    }


BAD = DAY + dt.timedelta(days=5)
"""When the bad bulk update of :func:`bad_update` happened."""
NEW_UID = "0000000a-1111-4222-8333-444444444444"


def bad_update(
    double: WorkflowDouble,
    archive: Archive,
    uids: list[str],
    *,
    at: dt.datetime = BAD,
    new: bool = True,
) -> dict[str, str]:
    """A bulk update gone wrong at ``at``: each of ``uids`` gets its subject overwritten
    and its task set back (a minute apart), and (``new``) an instance ``NEW_UID`` is
    created among them (group "Ticket"); each saved in the double and archived. Returns uid -> the
    snapshot id before the update."""
    before: dict[str, str] = {}
    for number, uid in enumerate(uids):
        live = double.workitems[uid]
        before[uid] = str(live.get_first("$snapshotid"))
        changed = live.copy()
        changed["subject"] = "overwritten"
        changed["$taskid"] = 9000
        changed.pop("$snapshotid", None)
        snapshot = double.save(changed, modified=at + dt.timedelta(minutes=number), event=False)
        archive.store(snapshot.copy())
    if not new:
        return before
    created = Document({"$uniqueid": NEW_UID, "subject": "new", "$workflowgroup": "Ticket"})
    snapshot = double.save(created, modified=at + dt.timedelta(seconds=30), event=False)
    archive.store(snapshot.copy())
    return before
