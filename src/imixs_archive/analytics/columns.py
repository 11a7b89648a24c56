"""Typed columns for the table export: a column spec per item, the type inferred from the
Imixs value types when not given, and the conversion of item values to cells.

Spec syntax: ``name`` (type inferred), ``name:type`` or ``name:type[]`` (a list column),
types ``str int float bool datetime decimal bytes json``. Inference looks at the first
batch of rows: one kind of value gives that type (``int`` and ``float`` together give
``float``; ``int`` and ``decimal`` give ``decimal``); mixed kinds give ``str``; an item
with more than one value in any row of the batch becomes a list column. A later value
that does not fit its column becomes null (in a list: a null element), and a second
value in a single-value column is left out; both are counted in the export's warnings.
Decimals are written as text (exact), maps and nested lists as JSON text.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from imixs_archive.document.labels import utc
from imixs_archive.document.model import Document, normalize_name
from imixs_archive.document.plain import as_text, plain
from imixs_archive.errors import ConfigError
from imixs_archive.jsonable import Jsonable

TYPES = ("str", "int", "float", "bool", "datetime", "decimal", "bytes", "json")
INT64 = (-(2**63), 2**63 - 1)


class Mismatch(Exception):
    """A value that does not fit its column's type."""


@dataclass(frozen=True)
class ColumnSpec:
    item: str
    kind: str | None = None
    """One of TYPES, or None: inferred."""
    multi: bool | None = None
    """A list column; None: inferred."""


@dataclass(frozen=True)
class Column(Jsonable):
    JSON_SKIP = ("kind", "multi")
    JSON_EXTRA = ("type",)

    name: str
    kind: str
    multi: bool

    @property
    def type(self) -> str:
        """The kind, ``[]`` after it for a list column (``str[]``)."""
        return self.kind + ("[]" if self.multi else "")


def parse_items(text: str) -> list[ColumnSpec]:
    """``"a,b:int,c:str[]"`` -> column specs (ConfigError on a bad spec)."""
    specs: list[ColumnSpec] = []
    for part in text.split(","):
        if not part.strip():
            continue
        name, _, kind = part.partition(":")
        multi: bool | None = None
        kind = kind.strip().lower()
        if kind.endswith("[]"):
            kind, multi = kind[:-2], True
        elif kind:
            multi = False
        if kind and kind not in TYPES:
            raise ConfigError(f"column {part.strip()!r}: type must be one of {', '.join(TYPES)}")
        item = normalize_name(name)
        if not item:
            raise ConfigError(f"column {part.strip()!r}: an item name is required")
        specs.append(ColumnSpec(item, kind or None, multi))
    if not specs:
        raise ConfigError("give at least one item (--items a,b,c)")
    if len({spec.item for spec in specs}) != len(specs):
        raise ConfigError("an item is named twice in --items")
    return specs


def kind_of(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, dt.datetime):
        return "datetime"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    return "json"


def infer(specs: Sequence[ColumnSpec], sample: Sequence[Document]) -> list[Column]:
    """The columns, with what the specs leave open inferred from ``sample``."""
    columns: list[Column] = []
    for spec in specs:
        kinds: set[str] = set()
        multi = False
        for doc in sample:
            values = doc.get_values(spec.item)
            multi = multi or len(values) > 1
            kinds.update(k for k in map(kind_of, values) if k is not None)
        kind = spec.kind or _resolve(kinds)
        columns.append(Column(spec.item, kind, multi if spec.multi is None else spec.multi))
    return columns


def _resolve(kinds: set[str]) -> str:
    if len(kinds) == 1:
        return next(iter(kinds))
    if kinds == {"int", "float"}:
        return "float"
    if kinds == {"int", "decimal"}:
        return "decimal"
    return "str"


def convert(kind: str, value: Any) -> Any:
    """One value as a cell of a column of this kind (Mismatch when it does not fit)."""
    if value is None:
        return None
    found = kind_of(value)
    if kind == "str":
        return value if found == "str" else as_text(value)
    if kind == "json":
        return json.dumps(plain(value), ensure_ascii=False)
    if kind == "int" and found == "int" and INT64[0] <= value <= INT64[1]:
        return int(value)
    if kind == "float" and found in ("int", "float", "decimal"):
        return float(value)
    if kind == "decimal" and found in ("int", "decimal"):
        return str(value)
    if kind == "bool" and found == "bool":
        return bool(value)
    if kind == "datetime" and found == "datetime":
        return utc(value)
    if kind == "bytes" and found == "bytes":
        return bytes(value)
    raise Mismatch(f"{found} value in a {kind} column")


def cell(column: Column, values: list[Any], warnings: dict[str, int]) -> Any:
    """The cell of one row: a scalar (first value) or a list, None when empty."""
    if column.multi:
        out: list[Any] = []
        for value in values:
            out.append(_safe(column, value, warnings))
        return out
    if not values:
        return None
    if len(values) > 1:
        _warn(warnings, f"{column.name}: more values than a single-value column holds")
    return _safe(column, values[0], warnings)


def _safe(column: Column, value: Any, warnings: dict[str, int]) -> Any:
    try:
        return convert(column.kind, value)
    except Mismatch as exc:
        _warn(warnings, f"{column.name}: {exc} written as null")
        return None


def _warn(warnings: dict[str, int], message: str) -> None:
    warnings[message] = warnings.get(message, 0) + 1
