"""``logs.py``: the log's format and levels as the settings say."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.logs import setup_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_levels_per_component_and_text_lines() -> None:
    out = io.StringIO()
    settings = load_settings(
        {"ARCHIVE_LOG_LEVEL": "warning", "ARCHIVE_LOG_LEVELS": "imixs_archive.sync=DEBUG"}
    )
    setup_logging(settings, out)
    try:
        logging.getLogger("imixs_archive.sync.service").debug("round %d", 7)
        logging.getLogger("imixs_archive.web").info("not shown")
        logging.getLogger("imixs_archive.web").warning("shown")
        lines = out.getvalue().splitlines()
        assert len(lines) == 2
        assert lines[0].endswith("DEBUG imixs_archive.sync.service: round 7")
        assert lines[1].endswith("WARNING imixs_archive.web: shown")
    finally:
        logging.getLogger("imixs_archive.sync").setLevel(logging.NOTSET)


def test_json_lines_and_setting_up_again_replaces_the_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    setup_logging(load_settings({"ARCHIVE_LOG_FORMAT": "json"}), first)
    setup_logging(load_settings({"ARCHIVE_LOG_FORMAT": "json"}), second)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("imixs_archive.x").exception("failed: %s", "it")
    assert first.getvalue() == ""
    record = json.loads(second.getvalue())
    assert record["level"] == "ERROR" and record["message"] == "failed: it"
    assert "RuntimeError: boom" in record["exception"] and record["time"].endswith("+00:00")


@pytest.mark.parametrize(
    "env",
    [
        {"ARCHIVE_LOG_LEVEL": "loud"},
        {"ARCHIVE_LOG_FORMAT": "xml"},
        {"ARCHIVE_LOG_LEVELS": "imixs_archive.sync"},
        {"ARCHIVE_LOG_LEVELS": "imixs_archive.sync=chatty"},
    ],
)
def test_bad_log_settings_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=next(iter(env))):
        load_settings(env)


def test_the_log_follows_standard_error_when_it_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread logging after the standard error the log was set up on was replaced and
    closed (a test's capture): the record goes to the standard error of now, and no
    "--- Logging error ---" with a traceback goes anywhere."""
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    setup_logging(load_settings({}))
    monkeypatch.setattr("sys.stderr", second)
    first.close()
    logging.getLogger("imixs_archive.ledger").warning("sequenced late")
    assert second.getvalue().endswith("WARNING imixs_archive.ledger: sequenced late\n")
    assert "Logging error" not in second.getvalue()
