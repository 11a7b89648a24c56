"""The Java clients' ``FORM`` login (``ARCHIVE_SERVICE_AUTHMETHOD=FORM`` on the workflow).

imixs-melman's FormAuthenticator, given ``ARCHIVE_SERVICE_ENDPOINT`` (``<base>/api``), first
asks for ``<endpoint>/model`` without credentials, as a Java EE container with FORM
authentication answers a protected resource: it needs a 2xx and a login form in it, and
takes the form's ``j_security_check`` action (relative to the endpoint, or absolute to
the host). It posts ``j_username`` and ``j_password`` there, unencoded, and keeps only the
cookie named ``JSESSIONID``, which it sends with every later request as a JAX-RS cookie
(``$Version=1;JSESSIONID=...;$Path=/api;$Domain=host``; ``auth.py java_cookies``).

So ``GET <endpoint>/model`` answers that login form (200, HTML; nothing of the archive in
it), and ``POST <endpoint>/j_security_check`` answers a login's session in the cookie
``JSESSIONID`` (the session ``/login`` gives, under the name the Java clients keep). A
refusal is a 401 and a warning in the log, since the workflow itself only loses the file
content it asks for later. Both answer at the root too (an endpoint without ``/api``).
"""

from __future__ import annotations

import logging

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from imixs_archive.web.auth import JAVA_SESSION_COOKIE, NotAuthenticatedError, TooManyLoginsError
from imixs_archive.web.dependencies import Svc
from imixs_archive.web.ui_actions import read_form, with_session

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)

LOGIN_FORM = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>imixs-archive: log in</title></head>
<body><form method="post" action="j_security_check">
<label>User <input name="j_username" autocomplete="username"></label>
<label>Password <input name="j_password" type="password" autocomplete="current-password"></label>
<button type="submit">Log in</button>
</form></body></html>
"""
"""The container's login page as the Java clients look for it: the first mention of
``j_security_check`` is the form's action, relative to the page (``<endpoint>/model``)."""


@router.get("/api/model")
@router.get("/model")
def java_login_page() -> Response:
    """The login form a Java EE container answers for a protected resource (melman's
    FormAuthenticator reads the form's action from it before it logs in)."""
    return HTMLResponse(LOGIN_FORM, headers={"Cache-Control": "no-store"})


@router.post("/api/j_security_check")
@router.post("/j_security_check")
async def java_form_login(request: Request, svc: Svc) -> Response:
    """The login: ``j_username`` and ``j_password``; the session in ``JSESSIONID``."""
    svc.auth.check_origin(request, "POST")  # as /login: no login from another site's page
    form = await read_form(request)
    name = form.get("j_username", "")
    try:
        principal = await run_in_threadpool(
            svc.auth.check_password, name, form.get("j_password", "")
        )
    except TooManyLoginsError:
        principal = None
    if principal is None:
        log.warning(
            "FORM login (j_security_check) of %r refused: check the workflow's "
            "ARCHIVE_SERVICE_USER and ARCHIVE_SERVICE_PASSWORD",
            name,
        )
        raise NotAuthenticatedError("wrong user name or password")
    response = JSONResponse({"user": principal.name, "role": str(principal.role)})
    return with_session(response, request, svc, principal, JAVA_SESSION_COOKIE)
