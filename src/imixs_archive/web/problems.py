"""Errors as JSON problem details, mapped once for the whole app.

Every error answer is ``application/problem+json``:
``{"type": "about:blank", "title": "Not Found", "status": 404, "message": "..."}``
(plus fields an error adds, e.g. ``failures``). Never a stack trace: an unexpected
exception is logged and answered with status 500 and a one-line message.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, RedirectResponse, Response

from imixs_archive.budget import BudgetSpentError, ClientGoneError
from imixs_archive.errors import (
    ArchiveError,
    ConfigError,
    DocumentError,
    IntegrityError,
    LegalHoldError,
    NotFoundError,
    StoreError,
    StoreUnavailableError,
)
from imixs_archive.services.jobs import JobBusyError, ShuttingDownError
from imixs_archive.web.auth import AccessDeniedError, NotAuthenticatedError, TooManyLoginsError

log = logging.getLogger(__name__)

PROBLEM_TYPE = "application/problem+json"
REALM = 'Basic realm="imixs-archive", charset="UTF-8"'


class PayloadTooLargeError(ArchiveError):
    """413: a request body over the configured limit."""


class BadRequestError(ArchiveError):
    """400: a parameter that cannot be used."""


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
    (PayloadTooLargeError, 413),
    (BadRequestError, 400),
    (DocumentError, 400),  # HostileInputError included
    (ConfigError, 503),  # a feature that is not configured
    (ShuttingDownError, 503),
    (BudgetSpentError, 503),
    (ClientGoneError, 503),  # nobody reads it
    (StoreUnavailableError, 503),
    (StoreError, 502),
    (IntegrityError, 502),  # the store gave back bytes that fail their check
)

INTEGRITY_TYPE = "urn:imixs-archive:problem:integrity"
"""The problem type of stored data that failed its check (status 502: what the store gave
back is invalid; not a fault of the request, nor one a retry mends)."""


MESSAGE_LIMIT = 1000
"""Characters of a message in an error answer: messages may quote the input, which must
not come back by the megabyte."""

_PROBLEM_SCHEMA = {
    "type": "object",
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "message": {"type": "string"},
    },
    "required": ["type", "title", "status", "message"],
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
        "message": brief(message),
        **extra,
    }
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_TYPE)


def _archive_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ArchiveError)
    status = status_of(exc)
    if request.url.path.startswith("/ui/") and status != 401:
        return error_page(request, status, exc.message)
    headers = {"WWW-Authenticate": REALM} if status == 401 else None
    if status == 503:
        headers = {"Retry-After": "30"}
    if isinstance(exc, TooManyLoginsError):
        headers = {"Retry-After": str(exc.retry_after)}
    extra = getattr(exc, "problem_extra", None) or {}
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


def _validation_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("query", "path"))
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return problem(400, "; ".join(parts) or "invalid request")


def _login_required(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LoginRequiredError)
    return RedirectResponse(f"/login?next={quote(exc.next_url, safe='/')}", status_code=303)


def _client_gone(request: Request, _exc: Exception) -> Response:
    """The client left while sending its body: nobody reads the answer, nothing to log
    beyond a line."""
    log.info("client went away during %s %s", request.method, request.url.path)
    return problem(400, "the client went away before the request body was complete")


def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error in %s %s", request.method, request.url.path)
    return problem(500, f"internal error: {type(exc).__name__}")


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ArchiveError, _archive_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(LoginRequiredError, _login_required)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(Exception, _unexpected)
