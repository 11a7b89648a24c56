"""The ledger's origin (C2SP tlog-checkpoint: a schema-less URL that names this log and no
other): given, configured, derived from the public URL, or made up so that it names no
other log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.ledger.forks import signed_path
from imixs_archive.ledger.keys import (
    check_origin,
    configured_origin,
    create_signer,
    key_path,
    origin_of,
)
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tree import read_tree
from imixs_archive.ledger.verify import verify_ledger
from imixs_archive.tlog.note import Checkpoint
from support.snapshots import make_snapshot


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


def test_a_ledger_started_before_keeps_its_origin_and_its_checkpoints_verify(
    archive: Archive, tmp_path: Path
) -> None:
    """A ledger of the old default origin (``imixs-archive/<host>``, no longer accepted
    for a new one), signed before the key kept its record: its checkpoint still verifies,
    and it goes on signing under its origin, with the record made from then on."""
    settings = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "keys")})
    create_signer(key_path(settings), "imixs-archive/vm")  # a key made by the old version
    for step in range(3):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    old = read_tree(archive.ledger)
    assert old is not None and old.origin == "imixs-archive/vm"
    signed_path(key_path(settings)).unlink()  # no record: signed before this version
    report = verify_ledger(archive, settings)
    assert report.ok, report.problems
    assert "the ledger's last checkpoint: 3 entries" in report.checkpoints
    archive.store(make_snapshot(3))
    with Sequencer(archive, settings) as sequencer:
        assert sequencer.drain(checkpoint=True).checkpoint == 4
    record = signed_path(key_path(settings)).read_text().split("\n\n")[0] + "\n"
    assert Checkpoint.parse(record).size == 4
    assert verify_ledger(archive, settings, since=old.checkpoint).ok
