"""Small pieces of the web layer without a server: ranges, negotiation, credentials."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from imixs_archive.config import load_settings
from imixs_archive.document.model import slice_pieces
from imixs_archive.errors import ConfigError
from imixs_archive.web.auth import Authenticator, Principal
from imixs_archive.web.credentials import (
    Role,
    check_exposure,
    hash_password,
    is_loopback,
    parse_tokens,
    parse_users,
    verify_password,
)
from imixs_archive.web.streaming import negotiate, parse_range


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-9", (0, 9)),
        ("bytes=5-", (5, 99)),
        ("bytes=-10", (90, 99)),
        ("bytes=-1000", (0, 99)),
        ("bytes=90-1000", (90, 99)),
        ("bytes=100-", False),
        ("bytes=-0", False),
        ("bytes=9-3", None),
        ("bytes=0-1,4-5", None),
        ("items=0-1", None),
        ("bytes=-", None),
    ],
)
def test_parse_range(header: str, expected: object) -> None:
    assert parse_range(header, 100) == expected


def test_slice_pieces_reads_no_piece_after_the_range() -> None:
    read: list[int] = []

    def pieces() -> object:
        for index in range(10):
            read.append(index)
            yield bytes([index]) * 10

    assert b"".join(slice_pieces(pieces(), 15, 24)) == b"\x01" * 5 + b"\x02" * 5  # type: ignore[arg-type]
    assert read == [0, 1, 2]


def _request(accept: str) -> Request:
    return Request({"type": "http", "headers": [(b"accept", accept.encode())]})


def test_negotiate() -> None:
    assert negotiate(_request(""), None) == "xml"
    assert negotiate(_request("*/*"), None) == "xml"
    assert negotiate(_request("text/html,application/xhtml+xml,*/*;q=0.8"), None) == "html"
    assert negotiate(_request("application/json"), None) == "json"
    assert negotiate(_request("application/json;q=0.1, text/xml"), None) == "xml"
    assert negotiate(_request("text/html"), "json") == "json"


def test_passwords_and_config_parsing() -> None:
    encoded = hash_password("s3cret", iterations=1000)
    assert verify_password("s3cret", encoded) and not verify_password("other", encoded)
    assert not verify_password("s3cret", "garbage")
    users = parse_users(f"ann:manager:{encoded}; bob:READER:{encoded};")
    assert users["ann"].role is Role.MANAGER and users["bob"].role is Role.READER
    with pytest.raises(ConfigError, match="role must be reader, auditor or manager"):
        parse_users(f"ann:admin:{encoded}")
    with pytest.raises(ConfigError, match="hash-password"):
        parse_users("ann:reader:plaintext")
    with pytest.raises(ConfigError, match="name:role:hash"):
        parse_users("ann")
    with pytest.raises(ConfigError, match="SHA-256"):
        parse_tokens("ci:reader:abc")


def test_exposure_rules() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("")
    check_exposure(load_settings({}))  # loopback without credentials: a local try-out
    with pytest.raises(ConfigError, match=r"refusing to listen on 0\.0\.0\.0 without credentials"):
        check_exposure(load_settings({"ARCHIVE_HTTP_HOST": "0.0.0.0"}))
    check_exposure(
        load_settings(
            {"ARCHIVE_HTTP_HOST": "0.0.0.0", "ARCHIVE_API_TOKENS": f"a:reader:{'0' * 64}"}
        )
    )


def test_session_cookies_are_signed_and_expire() -> None:
    encoded = hash_password("pw", iterations=1000)
    auth = Authenticator(load_settings({"ARCHIVE_USERS": f"ann:reader:{encoded}"}))
    cookie = auth.make_session(Principal("ann", Role.READER, "basic"), now=1000.0)
    assert auth.read_session(cookie, now=1001.0) == Principal("ann", Role.READER, "session")
    assert auth.read_session(cookie, now=1000.0 + 13 * 3600) is None
    body, _, signature = cookie.partition(".")
    assert auth.read_session(body + "x." + signature, now=1001.0) is None
    other = Authenticator(load_settings({"ARCHIVE_USERS": f"ann:reader:{encoded}"}))
    assert other.read_session(cookie, now=1001.0) is None  # another process's random key
