"""Builders shared by the tests: snapshot documents with attachments, and archives of
numbered process instances."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document

ORIGIN = "270e3a6d-a0e4-4875-89f1-3b418859abe5"
BASE_MILLIS = 1_700_000_000_000
CET = dt.timezone(dt.timedelta(hours=1))


def file_values(content: bytes, content_type: str = "application/pdf", **attrs: Any) -> list[Any]:
    """The ``$file`` entry of one attachment, with a correct md5checksum and size."""
    attributes: dict[str, list[Any]] = {
        "md5checksum": [hashlib.md5(content).hexdigest().upper()],
        "size": [len(content)],
    }
    attributes.update({key: [value] for key, value in attrs.items()})
    return [content_type, content, attributes]


def make_snapshot(
    step: int = 0,
    *,
    origin: str = ORIGIN,
    files: dict[str, bytes | list[Any]] | None = None,
    modified: dt.datetime | None = None,
    **items: Any,
) -> Document:
    """Snapshot number ``step`` of a process instance, one minute after the previous one.

    Keyword items use ``__`` for ``.`` (``snapshot__history=1`` is ``snapshot.history``;
    names are given without the leading ``$``: pass ``dollar_`` prefixed names as items)."""
    millis = BASE_MILLIS + step * 60_000
    when = modified or dt.datetime.fromtimestamp(millis / 1000, CET)
    doc = Document(
        {
            "$uniqueid": f"{origin}-{millis}",
            "$created": dt.datetime.fromtimestamp(BASE_MILLIS / 1000, CET),
            "$modified": when,
            "type": "snapshot-workitem",
            "$workflowgroup": "Invoice",
            "$taskid": 1000 + step,
            "subject": f"step {step}",
        }
    )
    if files:
        doc["$file"] = [
            {
                name: value if isinstance(value, list) else file_values(value)
                for name, value in files.items()
            }
        ]
        doc["$file.names"] = list(files)
        doc["$file.count"] = len(files)
    for name, value in items.items():
        doc[name.replace("dollar_", "$").replace("__", ".")] = value
    return doc


def content_of(doc: Document, name: str) -> bytes:
    """The bytes of one attachment, whether held or streamed."""
    content = doc.get_values("$file")[0][name][1]
    return content if isinstance(content, bytes) else content.read_all()


def numbered_origin(k: int) -> str:
    """The ``$uniqueid`` of process instance number ``k``."""
    return f"{k:08x}-0000-4000-8000-{k:012x}"


def fill_instances(
    archive: Archive, instances: int, items: Callable[[int, int], dict[str, Any]]
) -> int:
    """Instances 1 to ``instances``, instance ``k`` of 1 to 3 snapshots (``1 + k % 3``),
    each ``make_snapshot(step, origin=numbered_origin(k), **items(k, step))``, stored:
    returns how many."""
    stored = 0
    for k in range(1, instances + 1):
        for step in range(1 + k % 3):
            archive.store(make_snapshot(step, origin=numbered_origin(k), **items(k, step)))
            stored += 1
    return stored


def store_steps(folder: Path, steps: range) -> None:
    """Store the snapshots ``make_snapshot(step)`` in the embedded store in ``folder``,
    opened and closed again (as a command would): a folder a test copies between runs."""
    from imixs_archive.storage.sqlite.backend import SQLiteBackend

    with SQLiteBackend(folder) as backend, Archive(backend) as archive:
        for step in steps:
            archive.store(make_snapshot(step))
