"""The compatibility bar for the XML codec: the real Imixs classes, run on Java 17.

``tests/java/xml-check`` reads each document this archive writes with JAXB and
``XMLDocumentAdapter.putDocument`` (as the Java archive's ``DataService`` and the workflow's
``POST /snapshot`` do), dumps the typed values it holds and writes the document back; and it
writes documents of its own. Here every document must be read by Java without an error and
with the values written, and every document Java writes (or writes back) must be read here
with the values Java holds.

"The values Java holds" is the Java model after reading: ``ItemCollection`` drops ``null``
from top-level items; an empty list is a single ``null`` in the XML, so ``[null]`` and ``[]``
are one value; dates are instants in milliseconds; a ``Character`` becomes an ``Integer``
(``xs:unsignedShort``); other ``xs:*`` types are read with JAXB's default binding.

Skipped, with the reason, only when Maven or a Java 17 JDK is missing.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import random
import struct
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshot_xml import seal
from imixs_archive.document.json_codec import read_json
from imixs_archive.document.model import (
    BigInteger,
    BinaryStream,
    Byte,
    Document,
    Float,
    Long,
    Short,
    TypedText,
    XsType,
    xs_type_of,
)
from imixs_archive.document.xml_reader import read_xml, read_xml_document
from imixs_archive.document.xml_writer import to_xml
from support import java_xml_check

DATA = Path(__file__).parents[1] / "data" / "imixs"
SEED = 20261122
JAVA_DOCUMENTS = 150
PYTHON_DOCUMENTS = 150

# JAXB's default binding of the XML Schema types this codec keeps as TypedText, as dumped
# (checked by the run itself: a wrong entry fails the comparison)
_JAXB_READS = {
    "xs:unsignedShort": "integer",
    "xs:unsignedByte": "short",
    "xs:unsignedInt": "long",
    "xs:unsignedLong": "biginteger",
    "xs:date": "date",
    "xs:anyURI": "string",
    "xs:token": "string",
}
_TYPED_SAMPLES = [
    ("xs:unsignedShort", "65"),
    ("xs:unsignedShort", "20013"),
    ("xs:unsignedByte", "200"),
    ("xs:unsignedInt", "4000000000"),
    ("xs:unsignedLong", "18446744073709551615"),
    ("xs:date", "2012-03-04"),
    ("xs:anyURI", "http://example.org/a?b=c&d"),
    ("xs:token", "a b"),
]


# -- what Java holds, as comparable values ---------------------------------------------------


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _double(value: float) -> Any:
    return "NaN" if math.isnan(value) else value


def _millis(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)  # the check runs Java in UTC
    return (value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)


def _typed(value: TypedText) -> tuple[str, Any]:
    kind = _JAXB_READS[value.xs_type]
    text = str(value).strip()
    if kind == "date":
        return ("date", _millis(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)))
    if kind == "string":
        return ("string", str(value))
    return (kind, int(text))


_INTS = {
    XsType.INT: "integer",
    XsType.LONG: "long",
    XsType.SHORT: "short",
    XsType.BYTE: "byte",
    XsType.INTEGER: "biginteger",
}


def python_view(value: Any) -> Any:
    """A value of this codec as Java holds it after reading the XML we write."""
    kind = xs_type_of(value)
    if kind is XsType.NIL:
        return ("null",)
    if kind is XsType.MAP:
        return ("map", tuple(sorted((k, python_list(v)) for k, v in value.items())))
    if kind is XsType.LIST:
        return ("list", python_list(value))
    if kind is XsType.OTHER:
        return _typed(value)
    if kind in _INTS:
        return (_INTS[kind], int(value))
    if kind is XsType.FLOAT:
        return ("float", _double(_float32(value)))
    if kind is XsType.DOUBLE:
        return ("double", _double(value))
    if kind is XsType.DATETIME:
        return ("date", _millis(value))
    if kind is XsType.BASE64:
        data = value.read_all() if isinstance(value, BinaryStream) else bytes(value)
        return ("bytes", data)
    if kind is XsType.DECIMAL:
        return ("decimal", value)
    return (kind.value.removeprefix("xs:").lower(), value)  # string, boolean


def python_list(values: list[Any]) -> tuple[Any, ...]:
    viewed = tuple(python_view(v) for v in values)
    return () if viewed == (("null",),) else viewed


def python_document(doc: Document) -> dict[str, tuple[Any, ...]]:
    # ItemCollection.replaceItemValue drops null values from a top-level item
    return {
        name: python_list([v for v in values if v is not None])
        for name, values in doc.sorted_items()
    }


def java_view(tagged: dict[str, Any]) -> Any:
    """A value of XmlCheck's dump, comparable with :func:`python_view`."""
    kind = tagged["t"]
    text = tagged.get("v")
    if kind == "null":
        return ("null",)
    if kind == "map":
        return ("map", tuple(sorted((k, java_list(v)) for k, v in text.items())))
    if kind == "list":
        return ("list", java_list(text))
    if kind in ("integer", "long", "short", "byte", "biginteger", "date"):
        return (kind, int(text))
    if kind == "char":
        return ("integer", int(text))  # a Character is read back as an Integer
    if kind == "double":
        return ("double", _double(float(text)))
    if kind == "float":
        return ("float", _double(_float32(float(text))))
    if kind == "decimal":
        return ("decimal", Decimal(text))
    if kind == "bytes":
        return ("bytes", base64.b64decode(text))
    if kind == "boolean":
        return ("boolean", text == "true")
    return (kind, text)  # string, or "other" (never equal to a view of ours)


def java_list(values: list[Any]) -> tuple[Any, ...]:
    viewed = tuple(java_view(v) for v in values)
    return () if viewed == (("null",),) else viewed


def java_document(path: Path) -> dict[str, tuple[Any, ...]]:
    items = json.loads(path.read_text(encoding="utf-8"))["items"]
    return {name: java_list(values) for name, values in items.items()}


# -- documents this archive writes -----------------------------------------------------------


def every_type_document() -> Document:
    """One value of every kind, empty lists and maps at every level."""
    return Document(
        {
            "$uniqueid": "270e3a6d-a0e4-4875-89f1-3b418859abe5-1519000000000",
            "$modified": dt.datetime(2018, 2, 19, 1, 26, 40, 123000, tzinfo=dt.UTC),
            "offset": dt.datetime(
                2018, 2, 19, 1, 26, 40, tzinfo=dt.timezone(dt.timedelta(hours=1))
            ),
            "naive": dt.datetime(2020, 1, 1, 12, 0, 0, 123456),
            "strings": ["a", "", " b & <c> ]]> \"'", "tab\tnew\nline\rcr", "äöü € 中文"],
            "ints": [1, -(2**31), Long(5), Short(-3), Byte(7), BigInteger(10**20), 2**40, 10**30],
            "floats": [2.5, 1e16, 1e-5, math.nan, math.inf, -math.inf, Float(0.5), Float(3.14)],
            "other": [True, False, Decimal("12.50"), Decimal("-1E+3"), b"", b"\x00\xff"],
            "typed": [TypedText(t, v) for t, v in _TYPED_SAMPLES],
            "empty": [],
            "nones": ["x", None],
            "map": [{"empty": [], "one": [1], "Case": ["k"], "inner": [{}, [], {"e": []}]}],
            "emptymap": [{}],
            "nested": [[], [[]], [None, "a", [1, []]], [{"m": [[]]}]],
            "$file": [
                {
                    "a.txt": [
                        "text/plain",
                        b"abc",
                        {"md5checksum": ["900150983CD24FB0D6963F7D28E17F72"], "size": [3]},
                    ],
                    "dropped.pdf": ["application/pdf", b"", {}],
                }
            ],
        }
    )


class _Random:
    """Random documents of every value type (strings of the Basic Multilingual Plane: Java
    drops supplementary characters, see docs/java-compatibility.md)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def document(self) -> Document:
        doc = Document()
        for _ in range(self.rng.randint(1, 8)):
            doc[self.name()] = self.values(2)
        return doc

    def name(self) -> str:
        letters = "abcdefghijklmnopqrstuvwxyz$._-0123456789"
        return self.rng.choice(letters[:26]) + "".join(
            self.rng.choice(letters) for _ in range(self.rng.randint(0, 10))
        )

    def values(self, depth: int) -> list[Any]:
        return [self.value(depth) for _ in range(self.rng.randint(0, 4))]

    def text(self) -> str:
        pool = "ab c&<>\"'\t\n\räöüß€中文]]>\x7f\u2028\ufffd"
        return "".join(self.rng.choice(pool) for _ in range(self.rng.randint(0, 20)))

    def value(self, depth: int) -> Any:
        rng = self.rng
        kind = rng.randrange(19 if depth > 0 else 16)
        scalars: list[Any] = [
            self.text,
            lambda: rng.randint(-(2**31), 2**31 - 1),
            lambda: Long(rng.randint(-(2**63), 2**63 - 1)),
            lambda: Short(rng.randint(-(2**15), 2**15 - 1)),
            lambda: Byte(rng.randint(-128, 127)),
            lambda: BigInteger(rng.randint(-(10**40), 10**40)),
            lambda: rng.choice([rng.uniform(-1e6, 1e6), struct.unpack("d", rng.randbytes(8))[0]]),
            lambda: Float(_float32(rng.uniform(-1e3, 1e3))),
            lambda: rng.random() < 0.5,
            lambda: Decimal(rng.randint(-(10**15), 10**15)).scaleb(-rng.randint(0, 12)),
            lambda: self.datetime(),
            lambda: rng.randbytes(rng.randint(0, 40)),
            lambda: TypedText(*rng.choice(_TYPED_SAMPLES)),
            lambda: None,
            self.text,
            lambda: rng.randint(2**31, 2**62),
        ]
        if kind < len(scalars):
            return scalars[kind]()
        if kind == 16:
            return {self.name(): self.values(depth - 1) for _ in range(rng.randint(0, 3))}
        return self.values(depth - 1)

    def datetime(self) -> dt.datetime:
        rng = self.rng
        moment = dt.datetime(1900, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
            microseconds=rng.randrange(200 * 365 * 86400 * 10**6)
        )
        zones = [None, dt.UTC, dt.timezone(dt.timedelta(minutes=rng.randint(-840, 840)))]
        zone = rng.choice(zones)
        return moment.replace(tzinfo=None) if zone is None else moment.astimezone(zone)


def python_documents() -> Iterator[tuple[str, Document]]:
    for path in sorted(DATA.glob("*.xml")):
        for n, doc in enumerate(read_xml(path.read_bytes())):
            yield f"fixture-{path.stem}-{n}", doc
    for name in ("simple.json", "simple_numbers.json", "multidocuments.json", "workitem.json"):
        for n, doc in enumerate(read_json((DATA / name).read_bytes())):
            yield f"fixture-{Path(name).stem}-{n}", doc
    yield "every-type", every_type_document()
    generator = _Random(SEED)
    for n in range(PYTHON_DOCUMENTS):
        yield f"random-{n}", generator.document()


# -- the run ---------------------------------------------------------------------------------

SEALED = ("every-type", "random-0", "random-1", "random-2", "fixture-workitem-0")

# the form written before: a map entry without a value. Java must fail on it, or the check
# could not see the failure it is there for.
_OLD_FORM = b"""<?xml version="1.0" encoding="UTF-8"?>
<document xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <item name="m"><value xsi:type="xmlItemArray"><item name="e"/></value></item>
</document>
"""


@pytest.fixture(scope="module")
def java_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Document]]:
    try:
        check = java_xml_check.build()
    except java_xml_check.Unavailable as exc:
        pytest.skip(f"the Imixs XML classes cannot run here: {exc}")
    base = tmp_path_factory.mktemp("java-xml")
    written, out = base / "python", base / "java"
    written.mkdir()
    docs = dict(python_documents())
    for name, doc in docs.items():
        (written / f"{name}.xml").write_bytes(to_xml(doc))
        if name in SEALED:  # a snapshots row as this archive stores it: its seal after it
            (written / f"sealed-{name}.xml").write_bytes(seal(to_xml(doc)))
    (written / "old-form.xml").write_bytes(_OLD_FORM)
    check.run(written, out, JAVA_DOCUMENTS, SEED)
    # what we read of Java's documents, written again by us, goes back to Java
    again = base / "python-again"
    again.mkdir()
    for n in range(JAVA_DOCUMENTS):
        doc = read_xml_document((out / f"java-{n}.xml").read_bytes())
        (again / f"java-{n}.xml").write_bytes(to_xml(doc))
    check.run(again, base / "java-again", 0, SEED)
    return base, docs


Run = tuple[Path, dict[str, Document]]


def test_java_fails_on_a_map_entry_without_value(java_run: Run) -> None:
    out = java_run[0] / "java"
    assert "NullPointerException" in (out / "old-form.error").read_text()


def test_java_reads_every_document_we_write(java_run: Run) -> None:
    out, docs = java_run[0] / "java", java_run[1]
    errors = {p.stem: p.read_text().splitlines()[0] for p in out.glob("*.error")}
    errors.pop("old-form")
    assert errors == {}
    for name, doc in docs.items():
        assert java_document(out / f"{name}.json") == python_document(doc), name


def test_java_reads_the_rows_we_store_with_their_seal(java_run: Run) -> None:
    """A ``snapshots`` row carries its SHA-256 in a comment after the document
    (``archive/snapshot_xml.py``): the Java service reads the row as if it were not there."""
    out, docs = java_run[0] / "java", java_run[1]
    assert not list(out.glob("sealed-*.error"))
    for name in SEALED:
        assert java_document(out / f"sealed-{name}.json") == python_document(docs[name]), name


def test_we_read_what_java_writes_back(java_run: Run) -> None:
    out, docs = java_run[0] / "java", java_run[1]
    for name in docs:
        back = read_xml_document((out / f"{name}.rewritten.xml").read_bytes())
        assert python_document(back) == java_document(out / f"{name}.json"), name


def test_we_read_what_java_writes(java_run: Run) -> None:
    out = java_run[0] / "java"
    for n in range(JAVA_DOCUMENTS):
        doc = read_xml_document((out / f"java-{n}.xml").read_bytes())
        assert python_document(doc) == java_document(out / f"java-{n}.json"), n


def test_java_reads_again_what_we_read_of_its_documents(java_run: Run) -> None:
    base = java_run[0]
    assert sorted(p.name for p in (base / "java-again").glob("*.error")) == []
    for n in range(JAVA_DOCUMENTS):
        expected = java_document(base / "java" / f"java-{n}.json")
        assert java_document(base / "java-again" / f"java-{n}.json") == expected, n
