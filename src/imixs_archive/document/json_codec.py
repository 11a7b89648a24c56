"""Imixs JSON, as the Imixs REST API reads and writes it.

One document is ``{"item": [{"name": ..., "value": [...]}, ...]}``, a collection
``{"data": [doc, ...]}`` (``{"data": {"document": [...]}}`` is read too). A value is either

- typed: ``{"@type": "xs:int", "$": "1000"}`` (the lexical form of :mod:`.values`), with
  ``{"@type": "xmlItemArray", "item": [{"name": k, "value": [...]}, ...]}`` for a map,
  ``{"@type": "xmlItem", "value": [...]}`` for a nested list and ``null`` for nil; or
- plain: ``"x"``, ``1000`` (``xs:int``, or long/integer when larger), ``1.5``
  (``xs:double``), ``true``, ``null``, ``[...]`` (a nested list) and ``{key: [...]}`` (a map).

``"value"`` may hold a single value without list brackets, as Imixs writes it. Duplicate
keys in one JSON object are refused (a document that says two things is not one).

:func:`to_json` writes the typed form (lossless). ``typed=False`` writes the plain form,
which is lossy for types: typed integers and floats become plain numbers, and values that
JSON has no type for (dates, decimals, bytes, NaN/INF) become their lexical text.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from imixs_archive.document.base64_stream import iter_base64
from imixs_archive.document.lexical import format_value, parse_value
from imixs_archive.document.model import BinaryStream, Document, XsType
from imixs_archive.errors import DocumentError, HostileInputError

_MAP = XsType.MAP.value
_LIST = XsType.LIST.value
_BASE64 = XsType.BASE64.value


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            context = ""
            names = [v for k, v in pairs if k == "name" and isinstance(v, str)]
            if names:
                context = f" (in the item {names[0]!r})"
            raise DocumentError(f"duplicate key {key!r} in one JSON object{context}")
        result[key] = value
    return result


PairsFilter = Callable[[list[tuple[str, Any]]], list[tuple[str, Any]]]


def _load(data: bytes | str, pairs_filter: PairsFilter | None = None) -> Any:
    hook = _pairs_hook
    if pairs_filter is not None:

        def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            return _pairs_hook(pairs_filter(pairs))

    try:
        return json.loads(data, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"malformed JSON: {exc.msg}", f"line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise HostileInputError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise DocumentError(f"malformed JSON: {exc}") from None


MAX_DEPTH = 128
"""Nesting of JSON arrays and objects (twice the XML reader's element depth: a map level
is two JSON levels)."""


def _check_depth(root: Any) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH`` before the recursive walk meets it."""
    level: list[Any] = [root]
    for _depth in range(MAX_DEPTH + 1):
        nested = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
        if not nested:
            return
        level = nested
    raise HostileInputError(f"JSON nested deeper than {MAX_DEPTH} levels")


def read_json(data: bytes | str) -> list[Document]:
    """The documents of an Imixs JSON input (one document or a ``data`` collection)."""
    return read_json_skeleton(data, None)


def read_json_skeleton(data: bytes | str, pairs_filter: PairsFilter | None) -> list[Document]:
    """As :func:`read_json`, each object's pairs passed through ``pairs_filter`` first
    (``json_stream`` puts spooled strings back: a base64 ``$`` may then be a stream)."""
    root = _load(data, pairs_filter)
    if isinstance(root, dict | list):
        _check_depth(root)
    if isinstance(root, dict) and "item" in root:
        return [_document(root, 0)]
    if isinstance(root, dict) and "data" in root:
        docs = root["data"]
        if isinstance(docs, dict) and "document" in docs:
            docs = docs["document"]
        if isinstance(docs, dict):
            docs = [docs]
        if docs is None:
            return []
        if isinstance(docs, list):
            return [_document(doc, index) for index, doc in enumerate(docs)]
    keys = ", ".join(repr(k) for k in list(root)[:5]) if isinstance(root, dict) else ""
    found = f"an object with the keys {keys}" if isinstance(root, dict) else type(root).__name__
    raise DocumentError(
        f'not an Imixs document: expected an object with "item" or "data", found {found}'
    )


def _document(raw: Any, index: int) -> Document:
    where = f"document {index}"
    if not isinstance(raw, dict) or "item" not in raw:
        raise DocumentError('not an Imixs document: expected an object with "item"', where)
    doc = Document()
    for name, values in _items(raw["item"], where).items():
        if not name.strip():
            raise DocumentError("an item name must not be empty", where)
        doc[name] = values
    return doc


def _items(raw: Any, where: str) -> dict[str, list[Any]]:
    """``[{"name": ..., "value": ...}, ...]`` (or one such object) -> name -> values."""
    if raw is None:
        return {}
    entries = raw if isinstance(raw, list) else [raw]
    result: dict[str, list[Any]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise DocumentError('an item must be an object with a "name"', where)
        name = entry["name"]
        item_where = f"{where}, item {name!r}"
        result[name] = _values(entry.get("value"), item_where)
    return result


def _values(raw: Any, where: str) -> list[Any]:
    if raw is None:
        return []
    if isinstance(raw, list):
        return _unless_nil([_value(element, where) for element in raw])
    return _unless_nil([_value(raw, where)])


def _unless_nil(values: list[Any]) -> list[Any]:
    """One nil value is an empty list, at every level, as in XML (``XMLItem.setValue``
    writes an empty list so): the two formats read the same document."""
    return [] if len(values) == 1 and values[0] is None else values


def _value(raw: Any, where: str) -> Any:
    if isinstance(raw, dict):
        return _object_value(raw, where)
    if isinstance(raw, list):
        return _unless_nil([_value(element, where) for element in raw])
    if raw is None or isinstance(raw, str | bool | int | float):
        return raw
    raise DocumentError(f"unexpected JSON value {raw!r}", where)  # pragma: no cover


def _object_value(raw: dict[str, Any], where: str) -> Any:
    xs_type = raw.get("@type")
    if xs_type is None:
        if "$" in raw:
            return _lexical(raw["$"], where)
        if raw.get("@xsi:nil") in (True, "true") or raw.get("@nil") in (True, "true"):
            return None
        return {key: _values(values, where) for key, values in raw.items()}  # plain map
    if not isinstance(xs_type, str):
        raise DocumentError(f"@type must be a string, not {xs_type!r}", where)
    if xs_type == _MAP:
        return _items(raw.get("item"), where)
    if xs_type == _LIST:
        return _values(raw.get("value"), where)
    if xs_type in ("nil", "xs:nil"):
        return None
    if xs_type == _BASE64 and isinstance(raw.get("$"), BinaryStream):
        return raw["$"]  # spooled by json_stream: decoded as it is read
    return parse_value(xs_type, _lexical(raw.get("$", ""), where), where)


def _lexical(raw: Any, where: str) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, int | float):
        return repr(raw)
    raise DocumentError(f'"$" must hold text, not {type(raw).__name__}', where)


# -- writing -------------------------------------------------------------------------------


def to_json(
    docs: Document | Iterable[Document], *, typed: bool = True, collection: bool | None = None
) -> bytes:
    """The JSON of one document (``{"item": ...}``) or a collection (``{"data": [...]}``).

    ``typed=False`` writes the plain, lossy form (see the module docstring)."""
    return b"".join(iter_json(docs, typed=typed, collection=collection))


def iter_json(
    docs: Document | Iterable[Document], *, typed: bool = True, collection: bool | None = None
) -> Iterator[bytes]:
    """As :func:`to_json`, in parts: the bytes of binary streams (attachments) are
    base64-encoded piece by piece as they are read, never held whole. The rest of the
    documents (their items) is built in memory."""
    single = isinstance(docs, Document) if collection is None else not collection
    listed = [docs] if isinstance(docs, Document) else list(docs)
    streams: list[BinaryStream] = []
    marker = f"@@binary-{secrets.token_hex(8)}-"

    def binary(stream: BinaryStream) -> str:
        streams.append(stream)
        return f"{marker}{len(streams) - 1}@@"

    converted = [_document_json(doc, typed, binary) for doc in listed]
    if single:
        if len(converted) != 1:
            raise DocumentError(f"expected one document, got {len(converted)}")
        root: Any = converted[0]
    else:
        root = {"data": converted}
    text = json.dumps(root, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    parts = re.split(f'"{re.escape(marker)}(\\d+)@@"', text)
    for index, part in enumerate(parts):
        if index % 2 == 0:
            # Lone surrogates (not encodable) become JSON escapes: they read back the same.
            yield part.encode("utf-8", "backslashreplace")
        else:
            yield b'"'
            yield from iter_base64(streams[int(part)].iter_bytes())
            yield b'"'


Binary = Callable[[BinaryStream], str]
"""Stands in for a binary stream while the JSON is built (its bytes follow later)."""


def _document_json(doc: Document, typed: bool, binary: Binary) -> dict[str, Any]:
    if not isinstance(doc, Document):
        raise TypeError(f"expected a Document, got {type(doc).__name__}")
    items = []
    for name, values in doc.sorted_items():
        try:
            items.append({"name": name, "value": [_value_json(v, typed, binary) for v in values]})
        except DocumentError as exc:
            raise DocumentError(exc.reason, f"item {name!r}") from None
    return {"item": items}


def _value_json(value: Any, typed: bool, binary: Binary) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        entries = {key: _entry_values(value[key], typed, binary) for key in sorted(value)}
        if not typed:
            return entries
        return {"@type": _MAP, "item": [{"name": k, "value": v} for k, v in entries.items()]}
    if isinstance(value, list | tuple):
        elements = [_value_json(element, typed, binary) for element in value]
        return {"@type": _LIST, "value": elements} if typed else elements
    if isinstance(value, BinaryStream):
        return {"@type": _BASE64, "$": binary(value)} if typed else binary(value)
    if not typed:
        plain = _plain(value)
        if plain is not None:
            return plain
    xs_type, text = format_value(value)
    return {"@type": xs_type, "$": text} if typed else text


def _entry_values(values: Any, typed: bool, binary: Binary) -> list[Any]:
    entries = values if isinstance(values, list | tuple) else [values]
    return [_value_json(element, typed, binary) for element in entries]


def _plain(value: Any) -> str | bool | int | float | None:
    """The plain JSON value, or None when only the lexical text can carry it."""
    if isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and math.isfinite(value):
        return float(value)
    return None
