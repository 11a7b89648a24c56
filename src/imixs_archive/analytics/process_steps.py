"""What a snapshot is as a step of its process, for process mining: its name, its editor.

One rule for the event log (``event_log.py``, from the snapshot's XML) and the process map
(``process_map.py``, from the snapshot's fact, ``archive/facts.py``): both read the same
dimension labels (``$workflowstatus``, ``$taskid``, ``$workflowgroup``), so the map's
steps are the log's activities, which the pm4py test checks.

The step's name is the task as the workflow names it: ``$workflowstatus`` (Imixs-Workflow
writes the name of the task the instance is in), else ``task <$taskid>``; a snapshot with
neither is the step ``NO_TASK`` (it still appears, and is counted in a warning).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

from imixs_archive.analytics.archive_figures import archive_figures
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.labels import label
from imixs_archive.document.model import Document
from imixs_archive.errors import NotFoundError

NO_TASK = "(no task id)"
NO_TASK_WARNING = "snapshots without a task name or $taskid (the step '(no task id)')"
EDITOR_ITEMS = ("$editor", "$lasteditor", "namlasteditor", "namcurrenteditor")


def step_name(labels: Mapping[str, str]) -> str:
    """The step of a snapshot from its dimension labels (``status``, ``task``)."""
    status, task = labels.get("status", ""), labels.get("task", "")
    if status:
        return status
    if task:
        return f"task {task}"
    return NO_TASK


def editor(doc: Document) -> str:
    """Who made the step: the first of ``EDITOR_ITEMS`` with a value, else ``""``."""
    for item in EDITOR_ITEMS:
        text = label(doc.get_first(item))
        if text:
            return text
    return ""


def workflow_groups(archive: Archive, tz: dt.tzinfo) -> list[str]:
    """The workflow groups the archive holds snapshots of, largest first (the archive's
    figures, ``archive_figures.py``: kept per month, as the Statistics page reads them)."""
    figures = archive_figures(archive, tz=tz)
    return [name for name, _count in figures.ranked("group")]


def check_groups(archive: Archive, groups: Iterable[str], tz: dt.tzinfo) -> None:
    """NotFoundError naming the first of ``groups`` the archive holds no snapshot of."""
    wanted = list(groups)
    if not wanted:
        return
    known = set(workflow_groups(archive, tz))
    for group in wanted:
        if group not in known:
            hint = f"; the archive's groups: {', '.join(sorted(known)[:20])}" if known else ""
            raise NotFoundError(f"no workflow group {group!r} in the archive{hint}")
