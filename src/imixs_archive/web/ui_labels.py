"""How pages name snapshots and show values: a snapshot by its time (in the zone the page
names) and a readable label (task and workflow status), the id as link and tooltip; item
values as text with their times in that zone, empty values said so, nothing cut silently."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import quote

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import is_snapshot_id, snapshot_time
from imixs_archive.document.model import Document
from imixs_archive.document.plain import as_text
from imixs_archive.errors import ArchiveError

LONGEST_VALUE = 400
"""Longer values are shortened on a page, the whole text in the tooltip."""


def local_time(when: dt.datetime | str, tz: dt.tzinfo) -> str:
    """``2024-03-10 09:15:00`` in ``tz`` (the page names the zone); ``when`` may be ISO
    text (as JSON figures carry it)."""
    if isinstance(when, str):
        when = dt.datetime.fromisoformat(when)
    aware = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    return aware.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S")


def doc_label(doc: Document | None) -> str:
    """``1100 · In Progress``: the task and workflow status of a snapshot, what is there."""
    if doc is None:
        return ""
    parts = [str(doc.get_first(name, "") or "").strip() for name in ("$taskid", "$workflowstatus")]
    return " · ".join(part for part in parts if part)


def snapshot_entry(
    archive: Archive, snapshot_id: str, tz: dt.tzinfo, doc: Document | None = None
) -> dict[str, str]:
    """A snapshot as a list shows it: ``id``, ``time`` (in ``tz``) and ``label``."""
    time = local_time(snapshot_time(snapshot_id), tz) if is_snapshot_id(snapshot_id) else ""
    if doc is None:
        try:
            doc = archive.load(snapshot_id, with_files=False)
        except ArchiveError:
            doc = None
    return {"id": snapshot_id, "time": time or snapshot_id, "label": doc_label(doc)}


def value_text(value: Any, tz: dt.tzinfo) -> str:
    """One value as text: dates in ``tz`` (ISO, offset kept so it is unambiguous), lists
    and maps element by element, an empty (nil) value as ``(empty)``."""
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return aware.astimezone(tz).isoformat(timespec="seconds")
    if value is None:
        return "(empty)"
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(value_text(v, tz) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {value_text(v, tz)}" for k, v in value.items()) + "}"
    return as_text(value)


def values_text(values: list[Any], tz: dt.tzinfo) -> tuple[str, str]:
    """An item's values as (shown text, whole text): the shown text is shortened past
    ``LONGEST_VALUE`` characters, and says so."""
    whole = ", ".join(value_text(v, tz) for v in values) if values else "(no value)"
    if len(whole) <= LONGEST_VALUE:
        return whole, whole
    return f"{whole[:LONGEST_VALUE]}… ({len(whole):,} characters)", whole


def hold_badge(archive: Archive, uniqueid: str, tz: dt.tzinfo) -> dict[str, str] | None:
    """The legal holds of a process instance as the instance and snapshot pages show them,
    one per case (None when it is not held)."""
    holds = archive.holds.of(uniqueid)
    if not holds:
        return None
    since = "; ".join(
        f"since {local_time(h.placed, tz)}{' by ' + h.placed_by if h.placed_by else ''}: {h.reason}"
        for h in holds
    )
    return {
        "reason": "; ".join(h.reason for h in holds),
        "title": f"under legal hold {since}; retention and delete leave its snapshots alone",
        "link": f"/ui/holds#hold-{quote(uniqueid)}",
    }
