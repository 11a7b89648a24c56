"""``/ledger/``: the ledger's log as C2SP tlog-tiles (docs/ledger.md): the latest
checkpoint, the tree's tiles and the entry bundles, for standard tools (Go's
``golang.org/x/mod/sumdb/tlog``) to read and check. Readable by the auditor role (the log,
no archived data), readers and managers; by anyone with ``ARCHIVE_LEDGER_PUBLIC``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response

from imixs_archive.errors import NotFoundError
from imixs_archive.ledger.published import parse_tile_path, tile_data
from imixs_archive.ledger.tree import read_tree
from imixs_archive.web.dependencies import LogReader, Svc
from imixs_archive.web.problems import PROBLEM_RESPONSES

router = APIRouter(prefix="/ledger", tags=["ledger"], responses=PROBLEM_RESPONSES)
YEAR = 365 * 24 * 3600


@router.get(
    "/checkpoint",
    summary="The latest signed checkpoint (C2SP tlog-checkpoint, text/plain)",
    response_class=PlainTextResponse,
)
def get_checkpoint(svc: Svc, _who: LogReader) -> PlainTextResponse:
    head = read_tree(svc.archive.ledger)
    if head is None or not head.checkpoint:
        raise NotFoundError("the ledger has no signed checkpoint yet")
    return PlainTextResponse(
        head.checkpoint,
        media_type="text/plain; charset=utf-8",
        headers={"Cache-Control": "no-cache"},
    )


@router.get(
    "/tile/{path:path}",
    summary="A tile of the tree (tile/<L>/<N>[.p/<W>]) or an entry bundle "
    "(tile/entries/<N>[.p/<W>]), C2SP tlog-tiles",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
def get_tile(path: str, svc: Svc, _who: LogReader) -> Response:
    data = tile_data(svc.archive.ledger, read_tree(svc.archive.ledger), parse_tile_path(path))
    shared = "public" if svc.settings.ledger_public else "private"
    return Response(
        data,
        media_type="application/octet-stream",
        headers={"Cache-Control": f"{shared}, max-age={YEAR}, immutable"},
    )
