"""The ledger's origin (C2SP tlog-checkpoint: a schema-less URL that names this log and no
other): given, configured, derived from the public URL, or made up so that it names no
other log."""

from __future__ import annotations

import re

import pytest

from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.ledger.keys import check_origin, configured_origin, origin_of


@pytest.mark.parametrize(
    "origin",
    ["archive.example.com/invoices", "archive.example.com", "archive.example.com:8443/a/b"],
)
def test_a_schema_less_url_is_an_origin(origin: str) -> None:
    assert check_origin(origin) == origin


@pytest.mark.parametrize(
    ("origin", "why"),
    [
        ("vm", "a host name that has a dot"),
        ("localhost/archive", "a host name that has a dot"),
        ("3f2a9c1b7d4e", "a host name that has a dot"),
        ("imixs-archive/vm", "a host name that has a dot"),  # the old default
        ("https://archive.example.com/invoices", "no scheme"),
        ("archive.example.com/in voices", "no spaces"),
        ("archive.example.com/a+b", "no '+'"),
    ],
)
def test_what_is_not_a_schema_less_url_is_refused(origin: str, why: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(why)):
        check_origin(origin)


def test_the_origin_is_configured_or_derived_from_the_public_url() -> None:
    both = {
        "ARCHIVE_LEDGER_ORIGIN": "archive.example.com/invoices",
        "ARCHIVE_PUBLIC_URL": "https://other.example.com/x",
    }
    assert configured_origin(load_settings(both)) == "archive.example.com/invoices"
    url = {"ARCHIVE_PUBLIC_URL": "https://archive.example.com:8443/invoices/"}
    assert configured_origin(load_settings(url)) == "archive.example.com:8443/invoices"
    assert configured_origin(load_settings({})) == ""
    with pytest.raises(ConfigError, match="is not a URL"):
        configured_origin(load_settings({"ARCHIVE_PUBLIC_URL": "archive.example.com"}))
    with pytest.raises(ConfigError, match="not a schema-less URL"):
        configured_origin(load_settings({"ARCHIVE_PUBLIC_URL": "http://localhost:8080/"}))


def test_a_made_up_origin_names_no_other_log(caplog: pytest.LogCaptureFixture) -> None:
    first, second = origin_of(load_settings({})), origin_of(load_settings({}))
    assert first != second  # two hosts called vm no longer collide
    assert re.fullmatch(r"imixs-archive\.invalid/[A-Za-z0-9.-]+/[0-9a-f]{8}", first)
    assert check_origin(first) == first
    assert "made-up origin" in caplog.text
