"""The workflow's own logins to the archive (issue 31 item 6; java-beside.md, settings):
``ARCHIVE_SERVICE_AUTHMETHOD=FORM`` and ``COOKIE`` on the workflow side, as imixs-melman's
FormAuthenticator and CookieAuthenticator send them, byte for byte over a real socket:
FORM's first look at ``<endpoint>/model`` for the login form (issue 45 item 3), the form
body unencoded, only the ``JSESSIONID`` cookie kept, the cookies as JAX-RS writes them
(``$Version``, ``$Path``, ``$Domain``) or joined by commas. A wrong login loses nothing
silently: 401, and a warning for FORM."""

from __future__ import annotations

import hashlib
import http.client
import logging
from http.cookies import SimpleCookie
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


JAVA_ACCEPT = "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"
"""What a Java ``HttpURLConnection`` accepts when it is told nothing."""


def login_url(endpoint: str, page: str) -> str:
    """Where melman's FormAuthenticator posts, from the page ``<endpoint>/model`` answered:
    the text between the last ``="`` before the first mention of ``j_security_check``
    and the next ``"`` after it; absolute to the host when it starts with ``/``, else
    relative to the endpoint."""
    mention = page.index("j_security_check")
    end = page.index('"', mention)
    action = page[page.rindex('="', 0, end) + 2 : end]
    if action.startswith("/"):
        return action
    return f"{endpoint.rstrip('/')}/{action}"


def form_login(live: LiveServer, user: str, password: str, endpoint: str = "/api") -> str:
    """melman's FormAuthenticator(endpoint, user, password), request by request: GET
    ``<endpoint>/model`` without credentials (a 2xx, else it throws), POST the parameters
    concatenated unencoded to the form's action, and keep the value of the one cookie
    named JSESSIONID; '' when there is none (its filter then sends no cookie)."""
    java = {"User-Agent": "Java/17.0.12", "Accept": JAVA_ACCEPT}
    status, _, page = call(live, "GET", f"{endpoint}/model", java)
    assert 200 <= status <= 299, f"Error {status} - failed GET request from '{endpoint}/model'"
    body = f"j_username={user}&j_password={password}".encode()
    headers = {
        "Connection": "close",
        "User-Agent": "Mozilla/5.0",
        "Content-type": "application/x-www-form-urlencoded",
        "Accept": JAVA_ACCEPT,
    }
    status, answer, _ = call(live, "POST", login_url(endpoint, page.decode()), headers, body)
    jar = SimpleCookie()
    for name, value in answer:
        if name.lower() == "set-cookie":
            jar.load(value)
    kept = [morsel.value for name, morsel in jar.items() if name.upper() == "JSESSIONID"]
    return kept[0] if kept else ""


@pytest.mark.parametrize(
    ("endpoint", "sent"),
    [
        # melman's filter: a JAX-RS Cookie with the endpoint's path and host
        ("/api", "$Version=1;JSESSIONID={session};$Path=/api;$Domain=127.0.0.1"),
        ("", "$Version=1;JSESSIONID={session};$Domain=127.0.0.1"),  # endpoint at the root
        ("/api", "JSESSIONID={session},"),  # imixs-workflow-core's: HttpCookie + ","
        ("/api", "JSESSIONID={session}"),
    ],
)
def test_a_form_login_as_the_workflow_makes_it_reads_files(
    live: LiveServer, endpoint: str, sent: str
) -> None:
    session = form_login(live, "rex", PASSWORDS["rex"], endpoint)
    assert session
    got, _, body = call(live, "GET", MD5_PATH, {"Cookie": sent.format(session=session)})
    assert got == 200 and body == BIG


def test_the_login_page_holds_nothing_of_the_archive(live: LiveServer) -> None:
    status, headers, page = call(live, "GET", "/api/model", {"Accept": JAVA_ACCEPT})
    assert status == 200 and dict(headers)["content-type"].startswith("text/html")
    assert b"j_username" in page and b"j_password" in page and b"rex" not in page


def test_a_wrong_form_login_is_refused_and_logged(
    live: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="imixs_archive.web.java_form"):
        status, answer, _ = call(
            live,
            "POST",
            "/api/j_security_check",
            {"Content-type": "application/x-www-form-urlencoded"},
            b"j_username=rex&j_password=not-the-password",
        )
    assert status == 401 and not [v for k, v in answer if k.lower() == "set-cookie"]
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
