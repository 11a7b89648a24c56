"""What XML 1.0 cannot carry: the archive keeps every snapshot as XML, so a document whose
names or strings hold such characters (NUL, most C0 controls, lone surrogates, U+FFFE/F)
is refused, naming the item, rather than stored changed. (The XML writer drops them, as
Imixs does, when asked to write such a document anyway.)"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from imixs_archive.document.model import Document
from imixs_archive.errors import DocumentError

NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""A character outside XML 1.0's ``Char`` (tab, newline, carriage return, U+0020-U+D7FF,
U+E000-U+FFFD, U+10000-U+10FFFF), written as the few ranges that are not: the same
pattern as the complement of the allowed ones, compiled in 1 ms instead of 12 (each
archive process, worker processes too, compiled it at start)."""


def require_xml_safe(doc: Document) -> Document:
    """``doc`` itself, or a ``DocumentError`` naming the first item XML cannot carry."""
    for name, values in doc.items():
        _check(name, name, "its name")
        for value in values:
            _value(value, name)
    return doc


def _value(value: Any, item: str) -> None:
    if isinstance(value, str):
        _check(value, item, "a value")
    elif isinstance(value, Mapping):
        for key, entries in value.items():
            _check(key, item, f"the map key {key!r}")
            for entry in entries if isinstance(entries, list | tuple) else [entries]:
                _value(entry, item)
    elif isinstance(value, list | tuple):
        for element in value:
            _value(element, item)


def _check(text: str, item: str, what: str) -> None:
    found = NOT_XML.search(text) if isinstance(text, str) else None
    if found is not None:
        raise DocumentError(
            f"{what} holds the character U+{ord(found.group()):04X} (position "
            f"{found.start()}), which XML cannot carry: refused rather than stored changed",
            f"item {item!r}",
        )
