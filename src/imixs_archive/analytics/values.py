"""Imixs values as plain JSON-able data, for reports and CSV cells."""

from __future__ import annotations

import base64
import datetime as dt
import math
from decimal import Decimal
from typing import Any

from imixs_archive.document.model import BinaryStream


def utc(value: dt.datetime) -> dt.datetime:
    """An aware datetime in UTC (a naive one is taken as UTC, as the by-day index does)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def plain(value: Any) -> Any:
    """A JSON-able form: datetimes ISO 8601 (offset kept), bytes base64, decimals as
    text, non-finite floats as text, maps and lists recursively."""
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="milliseconds")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, BinaryStream):
        return f"<{value.size if value.size is not None else '?'} bytes>"
    if isinstance(value, dict):
        return {str(key): [plain(v) for v in values] for key, values in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value)


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
