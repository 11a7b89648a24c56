"""What the main API routes answer, for the OpenAPI description (``/api/openapi.json``).

The routes build their answers as dicts; these models describe them (declared with
``response_model=None, responses={200: {"model": ...}}``: an answer is neither filtered
nor validated through them, so a model that lags behind never costs a 500). Fields an
answer may add later are allowed (``extra="allow"``). Content that is not JSON (snapshot
XML, attachments, Prometheus text) is declared by media type.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from imixs_archive.web.problems import PROBLEM_RESPONSES


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class FileSummary(_Answer):
    name: str
    content_type: str
    size: int | None = Field(description="bytes (null for a file the Java service wrote)")


class SnapshotSummary(_Answer):
    snapshot: str = Field(description="the snapshot id: <uniqueid>-<epoch ms>")
    uniqueid: str
    created: str = Field(description="when the snapshot was taken, ISO 8601 in the answer's tz")
    modified: str | None = Field(description="its $modified, ISO 8601 in the answer's tz")
    type: str
    workflowgroup: str
    taskid: Any = Field(description="its $taskid (as stored)")
    files: list[FileSummary]


class InstanceListing(_Answer):
    uniqueid: str
    tz: str = Field(description="the time zone of the times in the answer")
    snapshots: list[SnapshotSummary] = Field(description="newest first")
    next: str | None = Field(description="the `after` of the next page; null at the end")


class DayListing(_Answer):
    from_day: str = Field(alias="from", description="first day (YYYY-MM-DD)")
    to_day: str = Field(alias="to", description="last day (YYYY-MM-DD)")
    tz: str = Field(description="the time zone of the days and times")
    snapshots: list[SnapshotSummary]
    next: str | None = Field(description="the `cursor` of the next page; null at the end")
    total: int | None = Field(None, description="how many snapshots the whole listing holds")


class Deleted(_Answer):
    snapshot: str
    deleted: bool


JobStateName = Literal["running", "stopping", "finished", "stopped", "failed", "not_run"]


class JobStatusAnswer(_Answer):
    """A job's current or last run; ``not_run`` before its first run since the service
    started (the fields of a run empty)."""

    name: str
    state: JobStateName
    started: str | None = Field(description="ISO 8601; null when it has not run")
    finished: str | None
    progress: dict[str, Any]
    message: str
    error: str | None
    result: dict[str, Any]
    active: bool = Field(description="running or stopping")
    last: dict[str, Any] | None = Field(
        None,
        description="ledger-verify only, before its first run here: the last result the "
        "store keeps (any process)",
    )


class RestoreOne(_Answer):
    snapshot: str
    restored: bool = Field(description="false when the workflow's instance already is at it")
    message: str


class Stored(_Answer):
    snapshot: str
    new: bool = Field(description="false: archived already")
    files: int
    logical_bytes: int
    new_bytes: int
    warnings: list[str]
    deleted_by_history: Any = Field(description="snapshots the history rule removed")


class PushReport(_Answer):
    stored: list[Stored]
    failed: list[dict[str, str]] = Field(description="{where, message}: empty in a 200/201")


Responses = dict[int | str, dict[str, Any]]
"""A route's ``responses=``: what it answers, by status code, for the OpenAPI description."""

CONFLICT: Responses = {
    409: {**PROBLEM_RESPONSES[400], "description": "a job of that name is running already"}
}
"""The 409 of a route that starts a job (one run per name at a time)."""

HELD = {**PROBLEM_RESPONSES[400], "description": "the process instance is under legal hold"}


def _text(*media: str, binary: bool = False) -> dict[str, Any]:
    schema = {"type": "string", "format": "binary"} if binary else {"type": "string"}
    return {name: {"schema": schema} for name in media}


def download(description: str, media: Iterable[str]) -> Responses:
    """The 200 of a route that answers a file to download, of one of the ``media`` types."""
    return {200: {"description": description, "content": _text(*media, binary=True)}}


DOCUMENT_CONTENT = {
    "application/xml": {"schema": {"type": "string"}},
    "application/json": {"schema": {"type": "array", "items": {"type": "object"}}},
    "text/html": {"schema": {"type": "string"}},
}
"""A snapshot or state document: ``<data><document>`` XML (default), Imixs JSON or HTML,
by ``format`` or ``Accept``."""

DOCUMENT_RESPONSES: Responses = {
    200: {"description": "the document (XML, JSON or HTML)", "content": DOCUMENT_CONTENT}
}

FILE_RESPONSES: Responses = {
    200: {
        "description": "the file's bytes (cut short, never completed, when stored data "
        "fails its check after the answer started)",
        "content": _text("application/octet-stream", binary=True),
    },
    206: {"description": "the range asked for", "content": _text("*/*", binary=True)},
    416: {**PROBLEM_RESPONSES[400], "description": "the range lies outside the file"},
}
