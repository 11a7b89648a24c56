"""Lexical forms of Imixs values, shared by the XML and the JSON codec.

:func:`parse_value` turns the text of a typed value into its Python value (see
:mod:`imixs_archive.document.model` for the mapping); :func:`format_value` does the reverse
for scalar values. Both follow XML Schema's lexical rules where Imixs (JAXB) does:

- ``xs:dateTime`` keeps the offset and the sub-second precision. Written with milliseconds
  (``2018-02-18T22:36:25.072+01:00``), with six digits only when there are sub-millisecond
  digits, ``Z`` for a zero offset and no offset for a naive value. Read: ``Z``, ``±HH:MM`` or
  no offset, no fraction or any number of fraction digits (truncated to microseconds).
  Offsets that are not whole minutes (XML Schema cannot express them) are written in UTC.
- ``xs:double`` / ``xs:float``: ``NaN``, ``INF``, ``-INF`` (``Infinity`` is read too).
- ``xs:boolean``: ``true``/``false``/``1``/``0``; written ``true``/``false``.
- ``xs:decimal``: no exponent, read or written (so ``1E+999999`` cannot blow up).
- ``xs:base64Binary``: standard alphabet; whitespace is tolerated on read, missing padding
  too.
- Integers are range-checked for their type (``xs:int`` 32 bit, ``xs:long`` 64 bit, ...).
- Any other ``xs:*`` type (Java writes a ``Character`` as ``xs:unsignedShort``; old data
  holds ``xs:date``, ``xs:anyURI``) is kept as a ``TypedText``: its type and text, written
  back as read. Other unknown types (not in the XML Schema namespace) are refused.
"""

from __future__ import annotations

import binascii
import datetime as dt
import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from imixs_archive.document.model import (
    INT8,
    INT16,
    INT32,
    INT64,
    BigInteger,
    BinaryStream,
    Byte,
    Float,
    Long,
    Short,
    TypedText,
    XsType,
    xs_type_of,
)
from imixs_archive.errors import DocumentError

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")  # no exponent (XML Schema)
_DATETIME = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
    r"T(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?"
    r"(?P<offset>Z|[+-][0-9]{2}:[0-9]{2})?"
)
_SPECIAL_FLOATS = {
    "NaN": math.nan,
    "INF": math.inf,
    "+INF": math.inf,
    "-INF": -math.inf,
    "Infinity": math.inf,
    "+Infinity": math.inf,
    "-Infinity": -math.inf,
}
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def _parse_int(cls: Callable[[int], int], bounds: tuple[int, int] | None) -> Any:
    def parse(text: str) -> int:
        text = text.strip()
        if not _INTEGER.fullmatch(text):
            raise ValueError("not an integer")
        number = int(text)
        if bounds is not None and not bounds[0] <= number <= bounds[1]:
            raise ValueError(f"out of range [{bounds[0]}, {bounds[1]}]")
        return cls(number)

    return parse


def _parse_double(cls: Callable[[float], float]) -> Any:
    def parse(text: str) -> float:
        text = text.strip()
        special = _SPECIAL_FLOATS.get(text)
        if special is not None:
            return cls(special)
        if not _DOUBLE.fullmatch(text):
            raise ValueError("not a number")
        return cls(float(text))

    return parse


def _parse_boolean(text: str) -> bool:
    try:
        return _BOOLEANS[text.strip()]
    except KeyError:
        raise ValueError("expected true, false, 1 or 0") from None


def _parse_decimal(text: str) -> Decimal:
    text = text.strip()
    if not _DECIMAL.fullmatch(text):
        raise ValueError("not a decimal number")
    try:
        return Decimal(text)
    except InvalidOperation:
        raise ValueError("not a decimal number") from None


def parse_datetime(text: str) -> dt.datetime:
    """An ``xs:dateTime`` (see the module docstring for what is accepted)."""
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        raise ValueError("expected YYYY-MM-DDThh:mm:ss[.fff][Z|±hh:mm]")
    fraction = match["fraction"] or ""
    micros = int((fraction + "000000")[:6])
    tz: dt.tzinfo | None = None
    offset = match["offset"]
    if offset == "Z":
        tz = dt.UTC
    elif offset:
        sign = -1 if offset[0] == "-" else 1
        delta = dt.timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6]))
        tz = dt.timezone(sign * delta)
    hour = int(match["hour"])
    end_of_day = hour == 24
    if end_of_day:  # 24:00:00 is the end of the day, i.e. midnight of the next one
        if match["minute"] != "00" or match["second"] != "00" or micros:
            raise ValueError("hour 24 is only allowed as 24:00:00")
        hour = 0
    value = dt.datetime(
        int(match["year"]),
        int(match["month"]),
        int(match["day"]),
        hour,
        int(match["minute"]),
        int(match["second"]),
        micros,
        tzinfo=tz,
    )
    return value + dt.timedelta(days=1) if end_of_day else value


def decode_base64(text: str | bytes) -> bytes:
    """Standard base64; whitespace and missing padding tolerated, other characters refused."""
    data = text.encode("ascii") if isinstance(text, str) else bytes(text)
    data = b"".join(data.split())
    if len(data) % 4:
        if data.endswith(b"="):
            raise ValueError("incomplete base64 padding")
        data += b"=" * (-len(data) % 4)
    decoded = binascii.a2b_base64(data, strict_mode=True)
    if data.endswith(b"=") and not padding_bits_clear(data[-4:]):
        raise ValueError("base64 padding bits are not zero (not canonical)")
    return decoded


_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def padding_bits_clear(quad: bytes) -> bool:
    """True when the bits a padded last quad of base64 does not use are zero, as every
    encoder writes them (``YQ==``, not ``YR==``): otherwise two texts decode alike."""
    if quad.endswith(b"=="):
        return _ALPHABET.find(quad[1:2]) % 16 == 0
    if quad.endswith(b"="):
        return _ALPHABET.find(quad[2:3]) % 4 == 0
    return True


def _parse_string(text: str) -> str:
    return text


_PARSERS: dict[str, Callable[[str], Any]] = {
    XsType.STRING: _parse_string,
    XsType.INT: _parse_int(int, INT32),
    XsType.LONG: _parse_int(Long, INT64),
    XsType.SHORT: _parse_int(Short, INT16),
    XsType.BYTE: _parse_int(Byte, INT8),
    XsType.INTEGER: _parse_int(BigInteger, None),
    XsType.DOUBLE: _parse_double(float),
    XsType.FLOAT: _parse_double(Float),
    XsType.BOOLEAN: _parse_boolean,
    XsType.DECIMAL: _parse_decimal,
    XsType.DATETIME: parse_datetime,
    XsType.BASE64: decode_base64,
}

SCALAR_TYPES = frozenset(_PARSERS)
"""The ``xsi:type`` names :func:`parse_value` has a Python type for."""


def is_scalar_type(xs_type: str) -> bool:
    """True for the types :func:`parse_value` reads: those of ``SCALAR_TYPES`` and any other
    ``xs:*`` type (kept as ``TypedText``)."""
    return xs_type in SCALAR_TYPES or (
        xs_type.startswith("xs:") and len(xs_type) > 3 and xs_type not in _STRUCTURE_TYPES
    )


_STRUCTURE_TYPES = frozenset({XsType.MAP.value, XsType.LIST.value, XsType.NIL.value, "xs:*"})


def parse_value(xs_type: str, text: str, where: str) -> Any:
    """The value of ``text`` read as ``xs_type`` (e.g. ``"xs:int"``).

    Raises ``DocumentError`` (with ``where``) for an unknown type or a text that is not a
    valid value of that type.
    """
    parser = _PARSERS.get(xs_type)
    if parser is None:
        if is_scalar_type(xs_type):
            return TypedText(xs_type, text)
        raise DocumentError(f"unknown value type {xs_type!r}", where)
    try:
        return parser(text)
    except (ValueError, binascii.Error, OverflowError) as exc:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise DocumentError(f"{shown!r} is not a valid {xs_type} value: {exc}", where) from None


def format_datetime(value: dt.datetime) -> str:
    """The ``xs:dateTime`` text of a datetime (milliseconds, offset as written by Imixs)."""
    offset = value.utcoffset()
    if offset is not None and (offset.seconds % 60 or offset.microseconds):
        value = value.astimezone(dt.UTC)
        offset = dt.timedelta(0)
    text = (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
        f"T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    )
    micros = value.microsecond
    text += f".{micros:06d}" if micros % 1000 else f".{micros // 1000:03d}"
    if offset is None:
        return text
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    hours, minutes = divmod(abs(minutes), 60)
    return f"{text}{sign}{hours:02d}:{minutes:02d}"


def format_double(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "INF" if value > 0 else "-INF"
    return repr(float(value))


def format_decimal(value: Decimal) -> str:
    if not value.is_finite():
        raise DocumentError(f"{value} cannot be written as xs:decimal")
    return format(value, "f")


_RANGES = {XsType.INT: INT32, XsType.LONG: INT64, XsType.SHORT: INT16, XsType.BYTE: INT8}


def format_value(value: Any) -> tuple[str, str]:
    """``(xsi:type, lexical text)`` of a scalar value.

    Maps, lists, ``None`` and ``BinaryStream`` are not scalars: the codecs write them
    themselves (``TypeError``). A typed integer out of its range is a ``DocumentError``.
    """
    if value is None or isinstance(value, BinaryStream | dict | list | tuple):
        raise TypeError(f"{type(value).__name__} is not a scalar value")
    kind = xs_type_of(value)
    if kind is XsType.STRING:
        return kind.value, str(value)
    if kind is XsType.BOOLEAN:
        return kind.value, "true" if value else "false"
    if kind in (XsType.INT, XsType.LONG, XsType.SHORT, XsType.BYTE, XsType.INTEGER):
        bounds = _RANGES.get(kind)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise DocumentError(f"{int(value)} is out of range for {kind.value}")
        return kind.value, str(int(value))
    if kind in (XsType.DOUBLE, XsType.FLOAT):
        return kind.value, format_double(value)
    if kind is XsType.DECIMAL:
        return kind.value, format_decimal(value)
    if kind is XsType.DATETIME:
        return kind.value, format_datetime(value)
    if kind is XsType.BASE64:
        return kind.value, binascii.b2a_base64(value, newline=False).decode("ascii")
    if kind is XsType.OTHER:
        return value.xs_type, str(value)
    raise TypeError(f"{type(value).__name__} is not a scalar value")  # pragma: no cover
