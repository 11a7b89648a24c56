"""A full backup from the workflow, as the Java backup service's ``FullBackupService``
makes one: for every workitem the workflow holds, a ``snapshot.backup[.<mirror>]`` event
of its newest snapshot (``$snapshotid``) with ``NO_OVERWRITE`` in its data, which the
backup of events (``backup_events.py``: ``backup-events``, ``serve``) then writes to the
FTPS target, taking each snapshot from the workflow. It needs no archive: it is the full
backup of ``BACKUP_ONLY`` setups, where there is none to walk (beside an archive,
``backup ftps://...`` writes from it).

The walk asks ``GET /documents/jpql/{query}`` (melman's ``queryDocuments``) for every
document that is not a snapshot, 100 to a page, only the items it needs, in one order
(``created``, then ``id``) so that the pages follow each other. Java asked each time for
the documents created after the last one it had seen, to the second in the JVM's zone,
and stopped at an answer of one: a workitem created in the same second as the last of a
page, and the very last workitem, were left out. Pages of one order leave none out; a
workitem deleted while the walk runs moves the later pages by one, so that one other may
be missed: run it again (``NO_OVERWRITE``: nothing current is written twice).
The engine decodes the query twice (JAX-RS, then its own ``URLDecoder``): the query holds
no ``%`` and reads the same either way, so Java's
``WORKFLOW_REST_JPQL_DOUBLEDECODE_WORKAROUND`` has nothing to do here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from imixs_archive.config import Settings
from imixs_archive.document.model import Document
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.events import NO_OVERWRITE, TOPIC_BACKUP

log = logging.getLogger(__name__)

QUERY = (
    "SELECT document FROM Document AS document WHERE (document.type IS NULL OR "
    "SUBSTRING(document.type, 1, 9) <> 'snapshot-') "
    "ORDER BY document.created ASC, document.id ASC"
)
"""Every document that is not a snapshot, in one order. No ``%`` in it (Java's ``NOT LIKE
'snapshot-%'``): the engine decodes the path twice, and a ``%`` sent once encoded fails
there, answered as an empty page (200) that would end the walk at once."""
ITEMS = ("type", "$created", "$uniqueid", "$snapshotid")
PAGE = 100


@dataclass
class FullBackupRequest:
    """What a walk did: documents met, events queued, pages read."""

    documents: int = 0
    queued: int = 0
    pages: int = 0

    def summary(self) -> str:
        return (
            f"full backup: {self.queued} snapshot.backup events queued (NO_OVERWRITE) for "
            f"{self.documents} workflow documents ({self.pages} pages read)"
        )


def queue_full_backup(
    client: WorkflowClient,
    topic: str,
    *,
    page_size: int = PAGE,
    progress: Callable[[int], None] | None = None,
) -> FullBackupRequest:
    """Walk the workflow's documents and queue an event on ``topic`` for the newest
    snapshot of each (a document without ``$snapshotid`` has none: passed); what was
    done; ``progress`` is told the documents of each page walked. A failing workflow
    raises (``WorkflowError``): the events queued stay, and a walk run again queues them
    again, harmless with ``NO_OVERWRITE``."""
    done = FullBackupRequest()
    flag = Document({NO_OVERWRITE: True})
    while True:
        page = client.query_documents(
            QUERY, page_size=page_size, page_index=done.pages, items=ITEMS
        )
        done.pages += 1
        for doc in page:
            done.documents += 1
            snapshot_id = str(doc.get_first("$snapshotid") or "").strip()
            if snapshot_id:
                client.put_event(topic, snapshot_id, flag)
                done.queued += 1
        if progress is not None:
            progress(len(page))
        if len(page) < page_size:
            log.info("%s", done.summary())
            return done


def queue_events_of_workflow(
    settings: Settings, progress: Callable[[int], None] | None = None
) -> FullBackupRequest:
    """:func:`queue_full_backup` as the settings say: the workflow, the topic of
    ``BACKUP_MIRROR_ID``."""
    mirror = settings.backup_mirror_id.strip()
    topic = f"{TOPIC_BACKUP}.{mirror}" if mirror else TOPIC_BACKUP
    with WorkflowClient.from_settings(settings) as client:
        return queue_full_backup(client, topic, progress=progress)
