"""Errors as JSON problem details, mapped once for the whole app.

Every error answer is ``application/problem+json`` (RFC 9457):
``{"type": "about:blank", "title": "Not Found", "status": 404, "detail": "...",
"message": "..."}`` (plus fields an error adds, e.g. ``failures``). ``detail`` is RFC 9457's
member for the explanation; ``message`` carries the same text for clients written against
earlier versions, which had only it. Never a stack trace: an unexpected
exception is logged and answered with status 500 and a one-line message.
"""

from __future__ import annotations

import contextvars
import logging
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from imixs_archive.budget import BudgetSpentError, ClientGoneError
from imixs_archive.errors import (
    ArchiveError,
    ConfigError,
    ConflictError,
    DocumentError,
    IntegrityError,
    LegalHoldError,
    NotFoundError,
    StoreError,
    StoreUnavailableError,
)
from imixs_archive.ledger.forks import ForkError
from imixs_archive.services.jobs import JobBusyError, ShuttingDownError
from imixs_archive.web.auth import AccessDeniedError, NotAuthenticatedError, TooManyLoginsError
from imixs_archive.web.http_middleware import HttpMiddleware

log = logging.getLogger(__name__)

PROBLEM_TYPE = "application/problem+json"
REALM = 'Basic realm="imixs-archive", charset="UTF-8"'


class PayloadTooLargeError(ArchiveError):
    """413: a request body over the configured limit."""


class BadRequestError(ArchiveError):
    """400: a parameter that cannot be used."""


class ServiceBusyError(ArchiveError):
    """503: the service runs as many of these at once as it may (e.g. streamed exports);
    the client tries again later."""


class LoginRequiredError(Exception):
    """A web page needs a logged-in user: answered with a redirect to the login page."""

    def __init__(self, next_url: str) -> None:
        super().__init__(next_url)
        self.next_url = next_url


# Most specific first: the first class an error is an instance of decides its status.
STATUS_OF: tuple[tuple[type[ArchiveError], int], ...] = (
    (TooManyLoginsError, 429),
    (NotAuthenticatedError, 401),
    (AccessDeniedError, 403),
    (NotFoundError, 404),
    (JobBusyError, 409),
    (LegalHoldError, 409),
    (ConflictError, 409),
    (ForkError, 409),  # the ledger is stopped: the key signs no fork (an operator's step)
    (PayloadTooLargeError, 413),
    (BadRequestError, 400),
    (DocumentError, 400),  # HostileInputError included
    (ConfigError, 503),  # a feature that is not configured
    (ShuttingDownError, 503),
    (ServiceBusyError, 503),
    (BudgetSpentError, 503),
    (ClientGoneError, 503),  # nobody reads it
    (StoreUnavailableError, 503),
    (StoreError, 502),
    (IntegrityError, 502),  # the store gave back bytes that fail their check
)

INTEGRITY_TYPE = "urn:imixs-archive:problem:integrity"
"""The problem type of stored data that failed its check (status 502: what the store gave
back is invalid; not a fault of the request, nor one a retry mends)."""
LEDGER_STOPPED_TYPE = "urn:imixs-archive:problem:ledger-stopped"
"""The problem type of a ledger stopped on a fork (status 409: the store's log is not an
extension of what the key or a witness signed; an operator starts a new log)."""


MESSAGE_LIMIT = 1000
"""Characters of a message in an error answer: messages may quote the input, which must
not come back by the megabyte."""

_PROBLEM_SCHEMA = {
    "type": "object",
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string", "description": "what went wrong (RFC 9457)"},
        "message": {"type": "string", "description": "the same as detail (older clients)"},
    },
    "required": ["type", "title", "status", "detail", "message"],
}


def _problem_doc(text: str) -> dict[str, Any]:
    return {"description": text, "content": {PROBLEM_TYPE: {"schema": _PROBLEM_SCHEMA}}}


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _problem_doc("a parameter or document that cannot be used"),
    401: _problem_doc("no credentials, or wrong ones"),
    403: _problem_doc("a reader asking for a manager's action, or a cross-site request"),
    404: _problem_doc("no such snapshot or file"),
    413: _problem_doc("a request body over ARCHIVE_MAX_UPLOAD_MB"),
    429: _problem_doc("too many failed logins for this user name"),
    502: _problem_doc(
        "the store refused the request, or gave back data that failed its integrity check "
        f"(type {INTEGRITY_TYPE})"
    ),
    503: _problem_doc("the store is unreachable, or the request ran out of time"),
}
"""The error answers every API route may give (for the OpenAPI description)."""


def brief(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text``, or its start and how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def status_of(error: ArchiveError) -> int:
    for cls, status in STATUS_OF:
        if isinstance(error, cls):
            return status
    return 500


def problem(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    *,
    kind: tuple[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """A problem answer; ``kind``: its type URI and title, when it has a type of its own."""
    kind_type, title = kind or ("about:blank", HTTPStatus(status).phrase)
    body = {
        "type": kind_type,
        "title": title,
        "status": status,
        "detail": brief(message),
        "message": brief(message),
        **extra,
    }
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_TYPE)


def _archive_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ArchiveError)
    status = status_of(exc)
    if isinstance(exc, IntegrityError):  # the operator's concern: one line, no traceback
        log.error("%s %s: %s", request.method, request.url.path, brief(exc.message))
    if request.url.path.startswith("/ui/") and status != 401:
        return error_page(request, status, exc.message)
    headers = {"WWW-Authenticate": REALM} if status == 401 else None
    if status == 503:
        headers = {"Retry-After": "30"}
    if isinstance(exc, TooManyLoginsError):
        headers = {"Retry-After": str(exc.retry_after)}
    extra = getattr(exc, "problem_extra", None) or {}
    if isinstance(exc, ForkError):
        kind = (LEDGER_STOPPED_TYPE, "The ledger is stopped: it signs no fork")
        return problem(status, exc.message, headers, kind=kind, **extra)
    if isinstance(exc, IntegrityError):
        kind = (INTEGRITY_TYPE, "Stored data failed its integrity check")
        return problem(status, exc.message, headers, kind=kind, **extra)
    return problem(status, exc.message, headers, **extra)


def error_page(request: Request, status: int, message: str) -> Response:
    """Errors of web pages as a page (with the navigation), not as JSON."""
    templates = request.app.state.services.templates
    response: Response = templates.TemplateResponse(
        request,
        "error.html",
        {
            "user": None,
            "nav": "",
            "status": status,
            "title": HTTPStatus(status).phrase,
            "message": message,
        },
        status_code=status,
    )
    return response


def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    if request.url.path.startswith("/ui/") and exc.status_code == 404:  # an unknown page
        return error_page(request, 404, f"there is no page {request.url.path}")
    return problem(exc.status_code, message, dict(exc.headers or {}))


def _validation_error(request: Request, exc: Exception) -> Response:
    """400 for a parameter or body that does not validate (FastAPI's 422): a problem for
    the API, the error page for a web page."""
    assert isinstance(exc, RequestValidationError)
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("query", "path"))
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    message = "; ".join(parts) or "invalid request"
    if request.url.path.startswith("/ui/"):
        return error_page(request, 400, brief(message))
    return problem(400, message)


def _login_required(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LoginRequiredError)
    return RedirectResponse(f"/login?next={quote(exc.next_url, safe='/')}", status_code=303)


def _client_gone(request: Request, _exc: Exception) -> Response:
    """The client left while sending its body: nobody reads the answer, nothing to log
    beyond a line."""
    log.info("client went away during %s %s", request.method, request.url.path)
    return problem(400, "the client went away before the request body was complete")


def _unexpected(request: Request, exc: Exception) -> Response:
    """A 500. The handler runs after the error was caught (on a worker thread, where
    ``log.exception`` finds no exception: it logged "NoneType: None"); the error is named
    here, and the server logs its traceback when Starlette raises it on."""
    error = f"{type(exc).__name__}: {exc}"
    log.error("unexpected error in %s %s: %s", request.method, request.url.path, brief(error))
    return problem(500, f"internal error: {type(exc).__name__}")


def _declare_400_not_422(app: FastAPI) -> None:
    """The OpenAPI description as the app answers: FastAPI declares 422 for any route with
    parameters or a body, but a request that does not validate is answered 400 here
    (``_validation_error``). Every 422 goes; a route that had one declares 400."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        fresh = app.openapi_schema is None
        schema = generate()
        if fresh:
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    answers = operation.get("responses", {})
                    if answers.pop("422", None) is not None:
                        answers.setdefault("400", PROBLEM_RESPONSES[400])
            schemas = schema.get("components", {}).get("schemas", {})
            for name in ("HTTPValidationError", "ValidationError"):
                schemas.pop(name, None)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def install_problem_handlers(app: FastAPI) -> None:
    _declare_400_not_422(app)
    app.add_exception_handler(ArchiveError, _archive_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(LoginRequiredError, _login_required)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(Exception, _unexpected)


_cut_short: contextvars.ContextVar[bool] = contextvars.ContextVar("cut_short", default=False)
_UNFINISHED = "ASGI callable returned without completing response."


class _QuietCut(logging.Filter):
    """Drops the server's line about an answer left unfinished when :class:`CutShort` left
    it so on purpose (it logged the reason already)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == _UNFINISHED and _cut_short.get())


_QUIET_CUT = _QuietCut()


class CutShort(HttpMiddleware):
    """ASGI middleware: an archive error (stored data failing its check) once an answer
    has started streaming can no longer become a problem answer. The answer is left
    unfinished, so the server closes the connection short of its ``Content-Length`` (or
    last chunk) and no client takes it for complete; the log gets one line naming the
    request and the fault, not a traceback."""

    def __init__(self, app: ASGIApp) -> None:
        super().__init__(app)
        server_log = logging.getLogger("uvicorn.error")
        if _QUIET_CUT not in server_log.filters:
            server_log.addFilter(_QUIET_CUT)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            # Starlette wraps an error with a handler once the answer started.
            cause = exc if isinstance(exc, ArchiveError) else exc.__cause__
            if not started or not isinstance(cause, ArchiveError):
                raise
            log.error("%s %s cut short: %s", scope.get("method"), scope.get("path"), cause.message)
            _cut_short.set(True)
