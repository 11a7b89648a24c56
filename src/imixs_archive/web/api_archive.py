"""``/api``: the Java service's endpoints (section 6 of the reference) and the archive's own
JSON endpoints: listings, push, delete, stats."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.types import DecoratedCallable
from starlette.concurrency import run_in_threadpool
from starlette.convertors import register_url_convertor
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import (
    iter_files,
    modified_time,
    origin_id,
    snapshot_millis,
)
from imixs_archive.document.json_codec import iter_json
from imixs_archive.document.model import Document
from imixs_archive.document.plain import as_text
from imixs_archive.errors import NotFoundError
from imixs_archive.services.listing_counts import count_modified
from imixs_archive.services.retention import Policy, instance_retention
from imixs_archive.services.statistics import archive_stats
from imixs_archive.timezones import day_bounds, from_epoch_ms, zone_label
from imixs_archive.web.api_analytics import Tz, request_zone
from imixs_archive.web.api_models import (
    DOCUMENT_RESPONSES,
    FILE_RESPONSES,
    HELD,
    DayListing,
    Deleted,
    InstanceListing,
    PushReport,
)
from imixs_archive.web.dependencies import Manager, Reader, Svc
from imixs_archive.web.problems import PROBLEM_RESPONSES, BadRequestError
from imixs_archive.web.push import PUSH_BODY, receive_snapshots
from imixs_archive.web.streaming import (
    AnyNameConvertor,
    file_response,
    headers_only,
    negotiate,
    stored_xml_response,
    xml_response,
)

# A file name may hold any character XML can carry, CR and LF included; Starlette's
# ``path`` convertor (``.*``) stops at a newline, so such a file could not be fetched.
register_url_convertor("anyname", AnyNameConvertor())

router = APIRouter(prefix="/api", tags=["archive"], responses=PROBLEM_RESPONSES)

Format = Annotated[Literal["xml", "json", "html"] | None, Query(description="xml, json or html")]
Limit = Annotated[int, Query(ge=1, le=1000, description="at most this many")]


def document_response(request: Request, svc: Svc, doc: Document, fmt: str | None) -> Response:
    chosen = negotiate(request, fmt)
    if chosen == "json":
        return StreamingResponse(iter_json(doc, collection=True), media_type="application/json")
    if chosen == "html":
        page = svc.templates.get_template("api_document.html").render(doc=doc, rows=doc_rows(doc))
        return Response(page, media_type="text/html")
    return xml_response(doc)


def doc_rows(doc: Document, tz: dt.tzinfo | None = None) -> list[tuple[str, list[str]]]:
    """(item name, values as text) for an HTML table; file contents shown by size only;
    dates in ``tz`` when given (else as stored)."""
    rows: list[tuple[str, list[str]]] = []
    for name, values in doc.sorted_items():
        if name == "$file":
            rows.append((name, [f"{e.name} ({e.content_type})" for e in iter_files(doc)]))
        else:
            rows.append((name, [_text(v, tz) for v in values]))
    return rows


def _text(value: Any, tz: dt.tzinfo | None = None) -> str:
    if isinstance(value, dt.datetime):
        when: dt.datetime = value
        if tz is not None:
            when = (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).astimezone(tz)
        return when.isoformat(timespec="milliseconds")
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_text(v, tz) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_text(v, tz)}" for k, v in value.items()) + "}"
    if value is None:
        return "(empty)"
    return as_text(value)


# ---- section 6: the Java service's API -----------------------------------------------


def get_and_head(path: str, **route: Any) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """Declares ``GET path`` and ``HEAD path`` (left out of the OpenAPI description): each
    route of the Java service's API answers HEAD too, as JAX-RS does for a GET resource,
    with its headers and no body read (``headers_only``)."""

    def declare(endpoint: DecoratedCallable) -> DecoratedCallable:
        declared = router.get(path, **route)(endpoint)
        router.head(path, include_in_schema=False)(endpoint)
        return declared

    return declare


@get_and_head(
    "/archive/snapshot/{snapshot_id}",
    summary="A snapshot, files merged back",
    response_class=Response,
    responses=DOCUMENT_RESPONSES,
)
def get_snapshot(
    request: Request, snapshot_id: str, svc: Svc, _who: Reader, format: Format = None
) -> Response:
    if negotiate(request, format) == "xml":  # the stored XML as it is, files spliced in
        stored = stored_xml_response(svc.archive.xml_with_files(snapshot_id).iter_bytes())
        if stored is not None:
            return headers_only(request, stored)
    doc = svc.archive.load(snapshot_id, with_files=True)
    return headers_only(request, document_response(request, svc, doc, format))


@get_and_head(
    "/archive/snapshot/{snapshot_id}/file/{name:anyname}",
    summary="One attachment",
    response_class=Response,
    responses=FILE_RESPONSES,
)
def get_snapshot_file(
    request: Request, snapshot_id: str, name: str, svc: Svc, _who: Reader, download: bool = False
) -> Response:
    entry, content = svc.archive.file_of_snapshot(snapshot_id, name)
    answer = file_response(
        request, content, entry.content_type, name=name, etag=content.key, attachment=download
    )
    return headers_only(request, answer)


_MEDIA_TYPE = re.compile(
    r"[\w.+-]+/[\w.+-]+(?:\s*;\s*[\w.+-]+=(?:[\w.+-]+|\"[^\"\x00-\x1f\x7f]*\"))*"
)
ContentType = Annotated[
    str | None,
    Query(
        alias="contentType",
        description="Content-Type of the answer (as in the Java service); default octet-stream",
    ),
]


@get_and_head(
    "/archive/md5/{md5}",
    summary="The bytes of the file with this MD5",
    response_class=Response,
    responses=FILE_RESPONSES,
)
def get_file_by_md5(
    request: Request, md5: str, svc: Svc, _who: Reader, content_type: ContentType = None
) -> Response:
    media_type = "application/octet-stream"
    if content_type is not None and content_type.strip():
        if not _MEDIA_TYPE.fullmatch(content_type.strip()):
            raise BadRequestError(f"contentType {content_type[:80]!r} is not a media type")
        media_type = content_type.strip()
    content = svc.archive.files.by_md5(md5)
    return headers_only(request, file_response(request, content, media_type, etag=content.key))


@get_and_head(
    "/archive/metadata",
    summary="The service state document",
    response_class=Response,
    responses=DOCUMENT_RESPONSES,
)
def get_metadata(request: Request, svc: Svc, _who: Reader, format: Format = None) -> Response:
    return document_response(request, svc, svc.archive.state.load(), format)


@get_and_head("/metadata", summary="syncpoint and count as text", include_in_schema=False)
@get_and_head(
    "/metadata/",
    summary="The resync's syncpoint and count as text (as the Java service)",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"example": "syncpoint=0\ncount=0\n"}}}},
)
def get_metadata_text(svc: Svc, _who: Reader) -> PlainTextResponse:
    """Two lines, ``syncpoint`` (milliseconds) and ``count``, each as name=value: the
    service state's ``sync.point`` and ``sync.count``, as the Java service answers them.
    ``count`` counts the snapshots the resync (the syncpoint walk) went through since it
    last started afresh; it is not the number of snapshots archived (the event sync,
    imports and pushes do not add to it): that is ``snapshots`` in ``/api/stats``."""
    state = svc.archive.state.load()
    point = state.get_first("sync.point", 0)
    count = state.get_first("sync.count", 0)
    return PlainTextResponse(f"syncpoint={point}\ncount={count}\n")


# ---- the archive's own endpoints -----------------------------------------------------


def summary(archive: Archive, snapshot_id: str, tz: dt.tzinfo = dt.UTC) -> dict[str, Any]:
    """A snapshot in a listing; its times in ``tz`` (the listing names the zone)."""
    doc = archive.load(snapshot_id, with_files=False)
    modified = doc.get_first("$modified")
    created = from_epoch_ms(snapshot_millis(snapshot_id))
    return {
        "snapshot": snapshot_id,
        "uniqueid": origin_id(snapshot_id),
        "created": created.astimezone(tz).isoformat(timespec="milliseconds"),
        "modified": modified_time(doc).astimezone(tz).isoformat(timespec="milliseconds")
        if isinstance(modified, dt.datetime)
        else None,
        "type": str(doc.get_first("type", "") or ""),
        "workflowgroup": str(doc.get_first("$workflowgroup", "") or ""),
        "taskid": doc.get_first("$taskid"),
        "files": [
            {"name": e.name, "content_type": e.content_type, "size": e.size}
            for e in iter_files(doc)
        ],
    }


@router.get(
    "/archive/instances/{uniqueid}/snapshots",
    summary="Snapshots of one instance",
    response_model=None,
    responses={200: {"model": InstanceListing}},
)
def list_instance(
    uniqueid: str,
    svc: Svc,
    _who: Reader,
    limit: Limit = 50,
    after: str | None = None,
    tz: Tz = None,
) -> dict[str, Any]:
    """Newest first; ``next`` is the ``after`` value of the following page (null at the end).
    Times in ``tz`` (default ``ARCHIVE_TIMEZONE``), named in the answer's ``tz``."""
    zone_info = request_zone(svc, tz)
    ids = svc.archive.list_instance(uniqueid, start_after=after, limit=limit + 1)
    page = ids[:limit]
    return {
        "uniqueid": uniqueid,
        "tz": zone_label(zone_info),
        "snapshots": [summary(svc.archive, sid, zone_info) for sid in page],
        "next": page[-1] if len(ids) > limit else None,
    }


@router.get(
    "/archive/instances/{uniqueid}/retention",
    summary="What the retention policy decides for one instance",
    responses={404: {"description": "the archive holds no snapshot of it"}},
)
def instance_retention_of(uniqueid: str, svc: Svc, _who: Reader) -> dict[str, Any]:
    """The rule of ``ARCHIVE_RETENTION`` that names the instance (null: none, kept), the
    time of its newest snapshot, when its snapshots go (``ends``), and whether a legal
    hold keeps them: ``retention --uniqueid``. One partition and one snapshot read."""
    found = instance_retention(svc.archive, Policy.parse(svc.settings.retention), uniqueid)
    if found is None:
        raise NotFoundError(f"the archive holds no snapshot of {uniqueid}")
    return found.to_json()


def _encode_cursor(day: dt.date, snapshot_id: str) -> str:
    raw = f"{day.isoformat()}~{snapshot_id}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_cursor(cursor: str) -> tuple[dt.date, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
        day, _, snapshot_id = raw.partition("~")
        return dt.date.fromisoformat(day), snapshot_id
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise BadRequestError(f"not a cursor from this API: {cursor!r}") from None


@router.get(
    "/archive/snapshots",
    summary="Snapshots by $modified day range",
    response_model=None,
    responses={200: {"model": DayListing}},
)
def list_by_modified(
    svc: Svc,
    _who: Reader,
    from_day: Annotated[dt.date, Query(alias="from", description="first day (tz)")],
    to_day: Annotated[dt.date | None, Query(alias="to", description="last day (tz)")] = None,
    limit: Limit = 100,
    cursor: str | None = None,
    tz: Tz = None,
) -> dict[str, Any]:
    """Snapshots whose ``$modified`` falls on the days ``from``..``to`` of the time zone
    ``tz`` (default ``ARCHIVE_TIMEZONE``; a day from local midnight to local midnight);
    times in that zone, named in the answer's ``tz``. In time order (by UTC day, within
    a day by the time the snapshot was taken, its id's millisecond suffix); ``next`` is
    the cursor of the following page; ``total``: how many the whole listing holds
    (``services/listing_counts.py``: counted without reading the snapshots)."""
    zone_info = request_zone(svc, tz)
    last = to_day or dt.datetime.now(zone_info).date()
    if last < from_day:
        raise BadRequestError(f"to ({last}) is before from ({from_day})")
    resume = _decode_cursor(cursor) if cursor else None
    found: list[tuple[dt.date, str]] = []
    for day, snapshot_id in svc.archive.days.iter_local_days(
        from_day, last, zone_info, resume=resume
    ):
        found.append((day, snapshot_id))
        if len(found) > limit:
            break
    page = found[:limit]
    start, end = day_bounds(from_day, zone_info)[0], day_bounds(last, zone_info)[1]
    total = len(found) if cursor is None and len(found) <= limit else None
    return {
        "from": from_day.isoformat(),
        "to": last.isoformat(),
        "tz": zone_label(zone_info),
        "total": total if total is not None else count_modified(svc.archive, start, end),
        "snapshots": [summary(svc.archive, sid, zone_info) for _day, sid in page],
        "next": _encode_cursor(*page[-1]) if len(found) > limit else None,
    }


@router.delete(
    "/archive/snapshot/{snapshot_id}",
    summary="Delete a snapshot and unused files",
    response_model=None,
    responses={200: {"model": Deleted}, 409: HELD},
)
def delete_snapshot(snapshot_id: str, svc: Svc, who: Manager) -> dict[str, Any]:
    result = svc.archive.delete(snapshot_id, by=who.name)
    if not result.existed:
        raise NotFoundError(f"snapshot {snapshot_id} is not in the archive")
    return {
        "snapshot": snapshot_id,
        "deleted": True,
    }


@router.post(
    "/archive/snapshot",
    summary="Archive pushed snapshots (XML or JSON body)",
    status_code=201,
    response_model=None,
    responses={
        201: {"model": PushReport, "description": "something new was archived"},
        200: {"model": PushReport, "description": "every document was archived already"},
    },
    openapi_extra={"requestBody": PUSH_BODY},
)
async def push_snapshot(request: Request, svc: Svc, _who: Manager) -> JSONResponse:
    """The body is a ``<document>``, a ``<data>`` of documents, or Imixs JSON. 201 when
    something new was archived, 200 when all was there already; a problem (400) when any
    document could not be archived (what was archived is listed with it)."""
    report = await receive_snapshots(request, svc)
    return JSONResponse(report, status_code=201 if any(s["new"] for s in report["stored"]) else 200)


@router.get("/stats", summary="What the archive holds")
def get_stats(svc: Svc, _who: Reader, tz: Tz = None) -> dict[str, Any]:
    return archive_stats(svc.archive, request_zone(svc, tz))


@router.get("/stats/dashboard", summary="Figures of the Statistics page")
async def get_dashboard(svc: Svc, _who: Reader, refresh: bool = False) -> dict[str, Any]:
    board = await run_in_threadpool(lambda: svc.dashboard.get(refresh=refresh))
    return board.to_json()
