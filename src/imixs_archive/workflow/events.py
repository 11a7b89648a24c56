"""The workflow's EventLog entries, as the REST API returns them.

``GET /eventlog/{topics}`` answers a ``<data>`` of documents with the items ``id``,
``ref``, ``created``, ``topic`` and ``data``. A locked entry's topic ends in ``.lock``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from imixs_archive.document.model import Document

TOPIC_ADD = "snapshot.add"
TOPIC_REMOVE = "snapshot.remove"
TOPIC_BACKUP = "snapshot.backup"
SYNC_TOPICS = (TOPIC_ADD, TOPIC_REMOVE)
LOCK_SUFFIX = ".lock"


@dataclass(frozen=True)
class Event:
    """One EventLog entry: ``ref`` is the snapshot id it is about."""

    id: str
    topic: str
    ref: str
    created: dt.datetime | None = None

    @property
    def base_topic(self) -> str:
        """The topic without a ``.lock`` suffix."""
        return self.topic.removesuffix(LOCK_SUFFIX)

    @classmethod
    def from_document(cls, doc: Document) -> Event:
        created = doc.get_first("created")
        return cls(
            id=str(doc.get_first("id", "")),
            topic=str(doc.get_first("topic", "")),
            ref=str(doc.get_first("ref", "")),
            created=created if isinstance(created, dt.datetime) else None,
        )


def backup_topics(mirrors: list[str] | tuple[str, ...]) -> list[str]:
    """``snapshot.backup`` and ``snapshot.backup.<mirror>`` for each mirror, as Java emits."""
    return [TOPIC_BACKUP, *(f"{TOPIC_BACKUP}.{mirror}" for mirror in mirrors if mirror)]
