"""The workflow's own logins to the archive (issue 31 item 6; java-beside.md, settings):
``ARCHIVE_SERVICE_AUTHMETHOD=FORM`` and ``COOKIE`` on the workflow side, as imixs-melman's
FormAuthenticator and CookieAuthenticator send them, byte for byte over a real socket:
the form body unencoded, the cookies as JAX-RS writes them (``$Version``, ``$Path``) or
joined by commas. A wrong login loses nothing silently: 401, and a warning for FORM."""

from __future__ import annotations

import hashlib
import http.client
import logging
from urllib.parse import urlsplit

import pytest

from web.live import BIG, PASSWORDS, TOKENS, LiveServer

MD5_PATH = f"/api/archive/md5/{hashlib.md5(BIG).hexdigest().upper()}"


def call(
    live: LiveServer, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request as a Java HttpURLConnection makes it: our headers only."""
    where = urlsplit(live.url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    try:
        connection.request(method, path, body=body or None, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


def form_login(live: LiveServer, user: str, password: str) -> tuple[int, str]:
    """melman's FormAuthenticator: POST <endpoint>/j_security_check, the parameters
    concatenated unencoded; the cookie it got (name=value), or ''."""
    body = f"j_username={user}&j_password={password}".encode()
    headers = {"User-Agent": "Mozilla/5.0", "Content-Type": "application/x-www-form-urlencoded"}
    status, answer, _ = call(live, "POST", "/api/j_security_check", headers, body)
    cookies = [v.split(";")[0] for k, v in answer if k.lower() == "set-cookie"]
    return status, cookies[0] if cookies else ""


@pytest.mark.parametrize(
    "sent",
    [
        "$Version=1;{cookie};$Path=/",  # JAX-RS (RESTEasy, Jersey) writing a Cookie object
        "{cookie},",  # imixs-workflow-core's FormAuthenticator: HttpCookie + ","
        "{cookie}",
    ],
)
def test_a_form_login_as_the_workflow_makes_it_reads_files(live: LiveServer, sent: str) -> None:
    status, cookie = form_login(live, "rex", PASSWORDS["rex"])
    assert status == 200 and cookie.startswith("imixs_archive_session=")
    got, _, body = call(live, "GET", MD5_PATH, {"Cookie": sent.format(cookie=cookie)})
    assert got == 200 and body == BIG


def test_a_wrong_form_login_is_refused_and_logged(
    live: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="imixs_archive.web.ui_actions"):
        status, cookie = form_login(live, "rex", "not-the-password")
    assert status == 401 and cookie == ""
    assert any(
        "j_security_check" in r.getMessage() and "rex" in r.getMessage() for r in caplog.records
    )
    assert call(live, "GET", MD5_PATH, {})[0] == 401


def test_a_cookie_login_as_the_workflow_sends_it(live: LiveServer) -> None:
    """melman's CookieAuthenticator: a cookie named ARCHIVE_SERVICE_USER holding
    ARCHIVE_SERVICE_PASSWORD (a user of ARCHIVE_USERS, or an API token by its name)."""
    for cookie in (f"rex={PASSWORDS['rex']}", f"t-reader={TOKENS['reader']}"):
        got, _, body = call(live, "GET", MD5_PATH, {"Cookie": f"$Version=1;{cookie};$Path=/"})
        assert got == 200 and body == BIG
    for wrong in ("rex=guess", f"t-manager={TOKENS['reader']}", "nobody=x"):
        assert call(live, "GET", MD5_PATH, {"Cookie": wrong})[0] == 401
    # a cookie gives no write: a manager's password in a cookie deletes nothing
    cookie = {"Cookie": f"mia={PASSWORDS['mia']}"}
    assert call(live, "DELETE", "/api/archive/snapshot/x-1", cookie)[0] == 401


def test_a_form_login_from_another_site_s_page_is_refused(live: LiveServer) -> None:
    body = f"j_username=rex&j_password={PASSWORDS['rex']}".encode()
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Origin": "https://elsewhere.example",
    }
    status, answer, _ = call(live, "POST", "/api/j_security_check", headers, body)
    assert status == 403 and not [v for k, v in answer if k.lower() == "set-cookie"]
