"""The workflow's EventLog entries, as the REST API returns them.

``GET /eventlog/{topics}`` answers a ``<data>`` of documents with the items ``id``,
``ref``, ``created``, ``topic`` and ``data``. A locked entry's topic ends in ``.lock``.
``data`` holds the items of the document the entry was created with (``PUT
/eventlog/{topic}/{ref}``), as one map: the Java full backup's ``NO_OVERWRITE`` flag.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from imixs_archive.document.model import Document

TOPIC_ADD = "snapshot.add"
TOPIC_REMOVE = "snapshot.remove"
TOPIC_BACKUP = "snapshot.backup"
SYNC_TOPICS = (TOPIC_ADD, TOPIC_REMOVE)
LOCK_SUFFIX = ".lock"
NO_OVERWRITE = "NO_OVERWRITE"
"""The flag in an entry's ``data`` (Java's ``FullBackupService``): the backup leaves a file
that holds the snapshot or a newer one as it is, whatever ``BACKUP_FTP_OVERWRITE`` says."""


@dataclass(frozen=True)
class Event:
    """One EventLog entry: ``ref`` is the snapshot id it is about."""

    id: str
    topic: str
    ref: str
    created: dt.datetime | None = None
    no_overwrite: bool = False
    """``data`` says ``NO_OVERWRITE`` (true, as Java's ``getItemValueBoolean`` reads it)."""

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
            no_overwrite=_flag(doc, NO_OVERWRITE),
        )


def _flag(doc: Document, name: str) -> bool:
    """A boolean of the entry's ``data`` map (names as Imixs keeps them: lower case, read
    whatever the case): its first value ``true`` (a boolean, or text Java's
    ``Boolean.parseBoolean`` takes for true)."""
    data = doc.get("data") or []
    options = data[0] if data and isinstance(data[0], dict) else {}
    values: Any = next((v for k, v in options.items() if str(k).lower() == name.lower()), [])
    value = values[0] if isinstance(values, list) and values else values
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def backup_topics(mirrors: list[str] | tuple[str, ...]) -> list[str]:
    """``snapshot.backup`` and ``snapshot.backup.<mirror>`` for each mirror, as Java emits."""
    return [TOPIC_BACKUP, *(f"{TOPIC_BACKUP}.{mirror}" for mirror in mirrors if mirror)]
