"""Lexical forms: every type both ways, and what is refused."""

from __future__ import annotations

import datetime as dt
import math
import pickle
from decimal import Decimal
from typing import Any

import pytest

from imixs_archive.document.lexical import format_value, parse_value
from imixs_archive.document.model import (
    BigInteger,
    BinaryStream,
    Byte,
    Float,
    Long,
    Short,
    TypedText,
    canonical,
)
from imixs_archive.errors import DocumentError

PLUS_ONE = dt.timezone(dt.timedelta(hours=1))

# (xsi:type, text as written, value)
KNOWN: list[tuple[str, str, Any]] = [
    ("xs:string", "  anna\n manfred ", "  anna\n manfred "),
    ("xs:int", "1000", 1000),
    ("xs:int", "-2147483648", -(2**31)),
    ("xs:long", "9223372036854775807", Long(2**63 - 1)),
    ("xs:short", "-32768", Short(-(2**15))),
    ("xs:byte", "127", Byte(127)),
    ("xs:integer", "123456789012345678901234567890", BigInteger(123456789012345678901234567890)),
    ("xs:double", "55.123", 55.123),
    ("xs:double", "NaN", math.nan),
    ("xs:double", "INF", math.inf),
    ("xs:double", "-INF", -math.inf),
    ("xs:double", "1e+300", 1e300),
    ("xs:float", "1.5", Float(1.5)),
    ("xs:boolean", "true", True),
    ("xs:boolean", "false", False),
    ("xs:decimal", "12.500", Decimal("12.500")),
    ("xs:decimal", "-0.000001", Decimal("-0.000001")),
    (
        "xs:dateTime",
        "2018-02-18T22:36:25.072+01:00",
        dt.datetime(2018, 2, 18, 22, 36, 25, 72000, tzinfo=PLUS_ONE),
    ),
    (
        "xs:dateTime",
        "2018-02-18T22:36:25.072001-05:30",
        dt.datetime(
            2018, 2, 18, 22, 36, 25, 72001, tzinfo=dt.timezone(-dt.timedelta(hours=5, minutes=30))
        ),
    ),
    (
        "xs:dateTime",
        "2018-02-18T22:36:25.000Z",
        dt.datetime(2018, 2, 18, 22, 36, 25, tzinfo=dt.UTC),
    ),
    ("xs:dateTime", "0987-01-02T03:04:05.000", dt.datetime(987, 1, 2, 3, 4, 5)),
    ("xs:base64Binary", "SGVsbG8sIEltaXhzIQ==", b"Hello, Imixs!"),
    ("xs:base64Binary", "", b""),
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, dt.datetime):
        return isinstance(b, dt.datetime) and a.isoformat() == b.isoformat()
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(("xs_type", "text", "value"), KNOWN)
def test_parse_known(xs_type: str, text: str, value: Any) -> None:
    assert _same(parse_value(xs_type, text, "here"), value)


@pytest.mark.parametrize(("xs_type", "text", "value"), KNOWN)
def test_format_known(xs_type: str, text: str, value: Any) -> None:
    assert format_value(value) == (xs_type, text)


@pytest.mark.parametrize(
    ("xs_type", "text", "value"),
    [
        ("xs:int", " 42\n", 42),
        ("xs:int", "+7", 7),
        ("xs:boolean", "1", True),
        ("xs:boolean", "0", False),
        ("xs:double", "Infinity", math.inf),
        ("xs:double", ".5", 0.5),
        ("xs:float", "-INF", Float(-math.inf)),
        (
            "xs:dateTime",
            "2018-02-18T22:36:25Z",
            dt.datetime(2018, 2, 18, 22, 36, 25, tzinfo=dt.UTC),
        ),
        (
            "xs:dateTime",
            "2018-02-18T22:36:25.123456789+01:00",
            dt.datetime(2018, 2, 18, 22, 36, 25, 123456, tzinfo=PLUS_ONE),
        ),
        (
            "xs:dateTime",
            "2018-02-18T22:36:25.1+01:00",
            dt.datetime(2018, 2, 18, 22, 36, 25, 100000, tzinfo=PLUS_ONE),
        ),
        ("xs:dateTime", "2018-02-18T24:00:00", dt.datetime(2018, 2, 19)),
        ("xs:base64Binary", "SGVs\nbG8s IEltaXhzIQ==\n", b"Hello, Imixs!"),
        ("xs:base64Binary", "SGVsbG8sIEltaXhzIQ", b"Hello, Imixs!"),
    ],
)
def test_parse_tolerated(xs_type: str, text: str, value: Any) -> None:
    assert _same(parse_value(xs_type, text, "here"), value)


@pytest.mark.parametrize(
    ("xs_type", "text"),
    [
        ("xs:int", "abc"),
        ("xs:int", str(2**31)),
        ("xs:int", "1.0"),
        ("xs:int", ""),
        ("xs:long", str(2**63)),
        ("xs:short", "40000"),
        ("xs:byte", "300"),
        ("xs:integer", "12a"),
        ("xs:double", "abc"),
        ("xs:double", "inf"),
        ("xs:double", "1_000"),
        ("xs:float", ""),
        ("xs:boolean", "yes"),
        ("xs:decimal", "1e3"),
        ("xs:decimal", "NaN"),
        ("xs:dateTime", "2018-02-30T10:00:00"),
        ("xs:dateTime", "2018-02-18 22:36:25"),
        ("xs:dateTime", "2018-02-18T25:00:00"),
        ("xs:dateTime", "2018-02-18T24:00:01"),
        ("xs:dateTime", "2018-02-18T22:36:25+1:00"),
        ("xs:dateTime", "yesterday"),
        ("xs:base64Binary", "!!!!"),
        ("xs:base64Binary", "QQ==QUJD"),
        ("xs:base64Binary", "Q"),
        ("xs:base64Binary", "Zé=="),
    ],
)
def test_parse_refused(xs_type: str, text: str) -> None:
    with pytest.raises(DocumentError) as info:
        parse_value(xs_type, text, "item 'x'")
    assert info.value.where == "item 'x'"
    assert xs_type in info.value.reason


def test_unknown_type_refused() -> None:
    with pytest.raises(DocumentError, match="unknown value type 'ns:duration'"):
        parse_value("ns:duration", "P1D", "item 'x'")
    with pytest.raises(DocumentError, match="unknown value type 'xs:'"):
        parse_value("xs:", "P1D", "item 'x'")


def test_other_xml_schema_types_kept_with_type_and_text() -> None:
    value = parse_value("xs:duration", " P1D ", "item 'x'")
    assert isinstance(value, TypedText)
    assert (value.xs_type, str(value)) == ("xs:duration", " P1D ")
    assert value == " P1D "  # reads and filters as its text
    assert format_value(value) == ("xs:duration", " P1D ")
    assert canonical(value) != canonical(" P1D ")  # but is not the same Imixs value
    assert pickle.loads(pickle.dumps(value)).xs_type == "xs:duration"
    with pytest.raises(ValueError):
        TypedText("xs:int", "1")  # has a Python type


def test_datetime_precision_written() -> None:
    value = dt.datetime(2020, 1, 1, 0, 0, 0, 123400, tzinfo=dt.UTC)
    assert format_value(value) == ("xs:dateTime", "2020-01-01T00:00:00.123400Z")
    naive = dt.datetime(2020, 1, 1, 0, 0, 0, 5000)
    assert format_value(naive) == ("xs:dateTime", "2020-01-01T00:00:00.005")


def test_datetime_zero_offset_reads_back_equal() -> None:
    value = dt.datetime(2020, 1, 1, tzinfo=dt.timezone(dt.timedelta(0)))
    text = format_value(value)[1]
    assert parse_value("xs:dateTime", text, "").isoformat() == value.isoformat()


def test_datetime_offset_with_seconds_written_in_utc() -> None:
    odd = dt.timezone(dt.timedelta(minutes=5, seconds=30))
    value = dt.datetime(2020, 1, 1, 0, 10, 0, tzinfo=odd)
    text = format_value(value)[1]
    assert text == "2020-01-01T00:04:30.000Z"
    assert parse_value("xs:dateTime", text, "") == value  # same instant


def test_plain_int_type_follows_size() -> None:
    assert format_value(2**31)[0] == "xs:long"
    assert format_value(2**63)[0] == "xs:integer"
    assert format_value(-5)[0] == "xs:int"


def test_decimal_written_without_exponent() -> None:
    assert format_value(Decimal("1E+3")) == ("xs:decimal", "1000")
    assert format_value(Decimal("1E-7")) == ("xs:decimal", "0.0000001")


def test_format_refuses_non_scalars_and_out_of_range() -> None:
    class Stream(BinaryStream):
        def iter_bytes(self):  # type: ignore[no-untyped-def]
            yield b""

    candidates: list[object] = [None, {}, [], (), Stream()]
    for value in candidates:
        with pytest.raises(TypeError):
            format_value(value)
    with pytest.raises(DocumentError, match="out of range for xs:short"):
        format_value(Short(100_000))
    with pytest.raises(DocumentError, match="decimal"):
        format_value(Decimal("NaN"))
