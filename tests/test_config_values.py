"""A setting with a value that cannot be read: one line naming the setting, the value and
what is expected; durations take a unit everywhere, a bare number keeps its old unit."""

from __future__ import annotations

import pytest

from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.web.credentials import parse_tokens, parse_users


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("ARCHIVE_HTTP_PORT", "abc", "a port number"),
        ("ARCHIVE_HTTP_PORT", "70000", "a port number from 1 to 65535"),
        ("BACKUP_FTP_PORT", "21.5", "a port number"),
        ("ARCHIVE_CLUSTER_RETRIES", "five", "a whole number"),
        ("WORKFLOW_SYNC_WORKERS", "1.5", "a whole number"),
        ("ARCHIVE_GC_GRACE", "x", "seconds or a number with ms, s, m, h or d"),
        ("ARCHIVE_REQUEST_TIMEOUT", "1 minute", "seconds or a number with"),
        ("ARCHIVE_CLUSTER_SSL", "maybe", "true or false"),
        ("ARCHIVE_RETENTION_INTERVAL", "5w", "milliseconds or a number with"),
        ("WORKFLOW_SYNC_INTERVAL", "soon", "milliseconds or a number with"),
        ("ARCHIVE_LOG_LEVEL", "loud", "one of DEBUG, INFO"),
        ("ARCHIVE_LOG_FORMAT", "xml", "text or json"),
        ("ARCHIVE_LOG_LEVELS", "uvicorn=LOUD", "a comma list of logger=LEVEL"),
        ("ARCHIVE_COOKIE_SECURE", "maybe", "one of auto, always, never"),
    ],
)
def test_a_bad_value_names_the_setting_the_value_and_what_is_expected(
    name: str, raw: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({name: raw})
    message = str(caught.value)
    assert message.startswith(f"{name}: expected ")
    assert expected in message and repr(raw) in message
    assert "\n" not in message and "invalid literal" not in message
    assert "could not convert" not in message


@pytest.mark.parametrize(
    ("name", "raw", "value"),
    [
        # seconds settings: a bare number is seconds, as before
        ("ARCHIVE_GC_INTERVAL", "3600", 3600.0),
        ("ARCHIVE_GC_INTERVAL", "0.5", 0.5),
        ("ARCHIVE_GC_INTERVAL", "500ms", 0.5),
        ("ARCHIVE_GC_INTERVAL", "5m", 300.0),
        ("ARCHIVE_GC_GRACE", "1d", 86400.0),
        ("ARCHIVE_REQUEST_TIMEOUT", "90s", 90.0),
        ("ARCHIVE_CLUSTER_REQUEST_TIMEOUT", "1.5s", 1.5),
        ("ARCHIVE_LEDGER_INTERVAL", "1h", 3600.0),
        ("ARCHIVE_LEDGER_CHECKPOINT_SECONDS", "2m", 120.0),
        # millisecond settings: a bare number is milliseconds, as before
        ("WORKFLOW_SYNC_INTERVAL", "200", 200),
        ("WORKFLOW_SYNC_INTERVAL", "30s", 30_000),
        ("WORKFLOW_SYNC_DEADLOCK", "1.5s", 1500),
        ("ARCHIVE_RETENTION_INTERVAL", "1d", 86_400_000),
        ("ARCHIVE_RETENTION_INTERVAL", "100ms", 100),
    ],
)
def test_every_duration_takes_a_unit_and_a_bare_number_keeps_its_unit(
    name: str, raw: str, value: float
) -> None:
    settings = load_settings({name: raw, "ARCHIVE_CLUSTER_CONTACTPOINTS": "db1"})
    field = next(f for f in vars(settings) if name in (f.upper(), f"ARCHIVE_{f.upper()}"))
    assert getattr(settings, field) == value


def test_the_generated_configuration_names_the_unit_of_every_duration() -> None:
    from imixs_archive.config import describe_settings

    durations = {
        env: text for env, _default, text in describe_settings() if "duration" in text.lower()
    }
    assert {"ARCHIVE_GC_INTERVAL", "WORKFLOW_SYNC_INTERVAL", "ARCHIVE_REQUEST_TIMEOUT"} <= set(
        durations
    )
    for env, text in durations.items():
        assert "a bare number is seconds" in text or "a bare number is milliseconds" in text, env


@pytest.mark.parametrize("wrong", [",", " ", "\n"])
def test_users_with_a_wrong_separator_say_the_expected_form(wrong: str) -> None:
    entry = "ann:manager:pbkdf2_sha256$1000$c2FsdA==$a2V5"
    with pytest.raises(ConfigError) as caught:
        parse_users(f"{entry}{wrong}{entry.replace('ann', 'bob')}")
    message = str(caught.value)
    assert message.startswith("ARCHIVE_USERS: entry 1 is not name:role:hash")
    assert "separated by ';'" in message
    assert "name:role:hash;name:role:hash" in message
    assert "e.g. ann:manager:pbkdf2_sha256$" in message and "hash-password" in message
    assert "a2V5" not in message  # the configured hashes are not echoed
    with pytest.raises(ConfigError, match=r"e\.g\. ci:reader:<64 hex digits>"):
        parse_tokens("ci reader abc")
