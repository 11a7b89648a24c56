"""Values as the analytics group them: in UTC, and as dimension labels (the plain form of
a value is ``document.plain``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from imixs_archive.document.plain import plain


def utc(value: dt.datetime) -> dt.datetime:
    """An aware datetime in UTC (a naive one is taken as UTC, as the by-day index does)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def label(value: Any) -> str:
    """One value as a dimension label: text as is, numbers in decimal, dates ISO in UTC;
    a missing value is ``""``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return utc(value).isoformat(timespec="seconds")
    if isinstance(value, str):
        return value.strip()
    plain_value = plain(value)
    return plain_value if isinstance(plain_value, str) else str(plain_value)
