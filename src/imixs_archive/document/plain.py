"""Imixs values as plain data: JSON-able (reports, the API, Parquet and CSV cells) and as
one line of text. The one rule for turning a value into text; the XML and JSON codecs
write values their own, exact way (``values.format_value``)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

from imixs_archive.document.model import BinaryStream


def plain(value: Any) -> Any:
    """A JSON-able form: numbers as ``int``/``float`` (an ``xs:long`` too), datetimes ISO
    8601 with milliseconds (offset kept), bytes base64, decimals and non-finite floats as
    text, maps and lists recursively."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)  # Long, Short, ...: their repr is not a number
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
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


def as_text(value: Any) -> str:
    """One value as text: the plain form, as is when it is text, else as JSON."""
    converted = plain(value)
    return converted if isinstance(converted, str) else json.dumps(converted, ensure_ascii=False)
