"""``POST /api/archive/snapshot``: a pushed body, streamed to a spool file, then archived.

The body is never held whole: it is copied as it arrives into a ``SpooledTemporaryFile``
(memory up to 1 MiB, then a temporary file) and counted; past ``ARCHIVE_MAX_UPLOAD_MB``
the request ends with 413, before the rest is read (a ``Content-Length`` over the limit
is refused before anything is read). The archive then ingests the spool on a worker
thread, the way the CLI's import does (``services.importer.archive_stream``: XML streams;
JSON too, its long strings spooled, see ``json_stream``).
"""

from __future__ import annotations

import tempfile
from typing import IO, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from imixs_archive.archive.snapshots import StoreResult
from imixs_archive.budget import current as current_budget
from imixs_archive.errors import ArchiveError, DocumentError, StoreError
from imixs_archive.services.importer import archive_stream
from imixs_archive.web.dependencies import Services
from imixs_archive.web.problems import PayloadTooLargeError, brief

SPOOL_MEMORY = 1024 * 1024

PUSH_BODY = {
    "required": True,
    "description": "a <document>, a <data> of documents, or Imixs JSON (one document or "
    '{"data": [...]}); at most ARCHIVE_MAX_UPLOAD_MB',
    "content": {
        "application/xml": {"schema": {"type": "string"}},
        "application/json": {"schema": {"type": "object"}},
    },
}
"""The request body, for the OpenAPI description (the route reads the raw stream)."""


class PushFailedError(DocumentError):
    """Some documents of a push could not be archived (400, with the details)."""

    def __init__(self, message: str, report: dict[str, Any]) -> None:
        super().__init__(message)
        self.problem_extra = report


async def receive_snapshots(request: Request, svc: Services) -> dict[str, Any]:
    limit = svc.settings.max_upload_mb * 1024 * 1024
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(_too_large(svc))
    is_json = "json" in request.headers.get("content-type", "").lower()
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY) as spool:
        received = 0
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise PayloadTooLargeError(_too_large(svc))
            if spool.tell() + len(chunk) > SPOOL_MEMORY:
                await run_in_threadpool(spool.write, chunk)  # may go to disk
            else:
                spool.write(chunk)
        if received == 0:
            raise DocumentError("the request has no body: expected a snapshot document")
        spool.seek(0)
        budget = current_budget()
        if budget is not None:
            # Archiving is linear in a body already received and limited: a push of
            # ARCHIVE_MAX_UPLOAD_MB is not cut by the time budget (a departure still stops it).
            budget.no_deadline()
        report = await run_in_threadpool(_ingest, svc, spool, is_json)
    if report["failed"]:
        failed = len(report["failed"])
        raise PushFailedError(
            f"{failed} document(s) could not be archived: {report['failed'][0]['message']}",
            report,
        )
    return report


def _too_large(svc: Services) -> str:
    return (
        f"the request body is larger than {svc.settings.max_upload_mb} MiB (ARCHIVE_MAX_UPLOAD_MB)"
    )


def _ingest(svc: Services, body: IO[bytes], is_json: bool) -> dict[str, Any]:
    stored: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    metrics = svc.metrics
    try:
        for outcome in archive_stream(svc.archive, body, name="request body", is_json=is_json):
            if isinstance(outcome, StoreResult):
                stored.append(_stored(outcome))
                metrics.record_ingest(
                    "push",
                    "new" if outcome.new else "present",
                    outcome.logical_bytes,
                    outcome.new_bytes,
                )
            else:
                where, error = outcome
                failed.append({"where": brief(where), "message": brief(str(error))})
                metrics.record_ingest("push", "failed")
    except StoreError:
        raise
    except ArchiveError as exc:  # the body stopped being readable: what came before stays
        failed.append({"where": "request body", "message": brief(str(exc))})
        metrics.record_ingest("push", "failed")
    return {"stored": stored, "failed": failed}


def _stored(result: StoreResult) -> dict[str, Any]:
    return {
        "snapshot": result.snapshot_id,
        "new": result.new,
        "files": result.files,
        "logical_bytes": result.logical_bytes,
        "new_bytes": result.new_bytes,
        "warnings": result.warnings,
        "deleted_by_history": result.deleted,
    }
