"""Streaming writer of Imixs XML.

Output is deterministic and byte-stable: items sorted by name, map keys sorted, one
element per line indented by four spaces, base64 on one line. It comes in pieces of
roughly 64 KiB; ``BinaryStream`` contents are encoded piece by piece, never joined.

An empty list is written as one ``<value xsi:nil="true"/>``, at every level (in an item,
a map entry or a nested list), as Imixs' ``XMLItem`` writes it: a map entry or nested
list without any value makes Java's ``XMLItem.transformValue`` throw.

Strings lose the characters XML 1.0 does not allow (as Imixs does); carriage returns are
written as ``&#13;`` and, in attributes, tabs and newlines as character references, so
every string that XML can hold reads back unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, BinaryIO

from imixs_archive.document.base64_stream import iter_base64
from imixs_archive.document.lexical import format_value
from imixs_archive.document.model import BinaryStream, Document
from imixs_archive.document.xml_reader import XS_NS, XSI_NS
from imixs_archive.document.xml_safe import NOT_XML
from imixs_archive.errors import DocumentError

PIECE_SIZE = 64 * 1024
"""Approximate size of the output pieces."""
_SMALL = PIECE_SIZE // 4

DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
NAMESPACES = f' xmlns:xs="{XS_NS}" xmlns:xsi="{XSI_NS}"'
_INDENT = "    "
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_ATTR_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\t": "&#9;",
        "\n": "&#10;",
        "\r": "&#13;",
    }
)
_NEEDS_ESCAPE = re.compile("[&<>\r]")


def xml_text(text: str) -> str:
    """Character data for element content: invalid characters dropped, markup escaped."""
    text = NOT_XML.sub("", text)
    return text.translate(_TEXT_ESCAPES) if _NEEDS_ESCAPE.search(text) else text


def xml_attribute(text: str) -> str:
    """A double-quoted attribute value that reads back as ``text``."""
    return NOT_XML.sub("", text).translate(_ATTR_ESCAPES)


def _is_single(docs: Document | Iterable[Document], collection: bool | None) -> bool:
    if collection is None:
        return isinstance(docs, Document)
    return not collection


def iter_xml(
    docs: Document | Iterable[Document], *, collection: bool | None = None
) -> Iterator[bytes]:
    """The XML of one document (root ``<document>``) or a collection (root ``<data>``).

    ``collection`` forces the form: ``True`` wraps even one ``Document`` in ``<data>``;
    ``False`` needs exactly one document.
    """
    single = _is_single(docs, collection)
    items: Iterable[Document] = [docs] if isinstance(docs, Document) else docs
    parts: list[str] = []
    size = 0
    for fragment in _fragments(items, single):
        if isinstance(fragment, bytes) and len(fragment) < _SMALL:
            fragment = fragment.decode("ascii")  # small base64: keep pieces large
        if isinstance(fragment, str):
            parts.append(fragment)
            size += len(fragment)
            if size < PIECE_SIZE:
                continue
        if parts:
            yield "".join(parts).encode("utf-8")
            parts = []
            size = 0
        if isinstance(fragment, bytes):
            yield fragment
    if parts:
        yield "".join(parts).encode("utf-8")


def to_xml(docs: Document | Iterable[Document], *, collection: bool | None = None) -> bytes:
    """The whole XML at once (for small inputs and tests)."""
    return b"".join(iter_xml(docs, collection=collection))


def write_xml(
    docs: Document | Iterable[Document], out: BinaryIO, *, collection: bool | None = None
) -> int:
    """Write the XML to a binary file object; returns the number of bytes written."""
    written = 0
    for piece in iter_xml(docs, collection=collection):
        out.write(piece)
        written += len(piece)
    return written


def _fragments(docs: Iterable[Document], single: bool) -> Iterator[str | bytes]:
    yield DECLARATION
    if single:
        found = 0
        for doc in docs:
            found += 1
            if found > 1:
                raise DocumentError("more than one document given for a single <document>")
            yield from _document(doc, "", NAMESPACES)
        if found != 1:
            raise DocumentError("no document given for a single <document>")
        return
    yield f"<data{NAMESPACES}"
    opened = False
    for doc in docs:
        if not opened:
            yield ">\n"
            opened = True
        yield from _document(doc, _INDENT, "")
    yield "</data>\n" if opened else "/>\n"


def _document(doc: Document, indent: str, namespaces: str) -> Iterator[str | bytes]:
    if not isinstance(doc, Document):
        raise TypeError(f"expected a Document, got {type(doc).__name__}")
    if not doc:
        yield f"{indent}<document{namespaces}/>\n"
        return
    yield f"{indent}<document{namespaces}>\n"
    inner = indent + _INDENT
    for name, values in doc.sorted_items():
        try:
            yield from _item(name, values, inner)
        except DocumentError as exc:
            raise DocumentError(exc.reason, f"item {name!r}") from None
    yield f"{indent}</document>\n"


def _item(name: str, values: Iterable[Any], indent: str) -> Iterator[str | bytes]:
    yield f'{indent}<item name="{xml_attribute(name)}">\n'
    inner = indent + _INDENT
    empty = True
    for value in values:
        empty = False
        if type(value) is str:  # as in _value, without a generator for each value
            yield f'{inner}<value xsi:type="xs:string">{xml_text(value)}</value>\n'
        else:
            yield from _value(value, inner)
    if empty:
        yield f'{inner}<value xsi:nil="true"/>\n'
    yield f"{indent}</item>\n"


def _value(value: Any, indent: str) -> Iterator[str | bytes]:
    if type(value) is str:  # the most common by far: no walk through the type checks
        yield f'{indent}<value xsi:type="xs:string">{xml_text(value)}</value>\n'
    elif value is None:
        yield f'{indent}<value xsi:nil="true"/>\n'
    elif isinstance(value, Mapping):
        yield from _map(value, indent)
    elif isinstance(value, list | tuple):
        yield f'{indent}<value xsi:type="xmlItem">\n'
        for element in value or [None]:
            yield from _value(element, indent + _INDENT)
        yield f"{indent}</value>\n"
    elif isinstance(value, BinaryStream | bytes | bytearray | memoryview):
        yield f'{indent}<value xsi:type="xs:base64Binary">'
        pieces = value.iter_bytes() if isinstance(value, BinaryStream) else [value]
        yield from iter_base64(pieces)
        yield "</value>\n"
    else:
        xs_type, text = format_value(value)
        yield f'{indent}<value xsi:type="{xs_type}">{xml_text(text)}</value>\n'


def _map(value: Mapping[str, Any], indent: str) -> Iterator[str | bytes]:
    if not value:
        yield f'{indent}<value xsi:type="xmlItemArray"/>\n'
        return
    yield f'{indent}<value xsi:type="xmlItemArray">\n'
    inner = indent + _INDENT
    for key in sorted(value):
        entry = value[key]
        entries = entry if isinstance(entry, list | tuple) else [entry]
        yield from _item(key, entries, inner)
    yield f"{indent}</value>\n"
