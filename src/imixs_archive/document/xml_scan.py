"""Light scans of Imixs XML with expat, for those that need a few things of a document and
not its values (the full reader is ``xml_reader.py``): where the files' contents go in a
stored snapshot (``archive/stored_xml.py``), the ids and times of a syncpoint answer
(``sync/catchup.py``). The parser is set up one way for them all: no DTD (its entities
could make up the very items a scan reads: :class:`DoctypeRefused`, and the caller reads
the document with the full reader, which says why), no parameter entities, character data
in one piece per run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from xml.parsers import expat


class DoctypeRefused(Exception):
    """The document declares a DTD: not scanned."""


def scanner(
    start: Callable[[str, dict[str, str]], None],
    end: Callable[[str], None],
    text: Callable[[str], None],
    *,
    namespaces: bool = False,
) -> Any:
    """An expat parser calling ``start``, ``end`` and ``text``; with ``namespaces``, a tag
    is ``<namespace> <local name>`` (``"document"`` alone when it has none)."""
    parser = expat.ParserCreate(namespace_separator=" ") if namespaces else expat.ParserCreate()
    parser.buffer_text = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    return parser


def _refuse(*_args: object) -> None:
    raise DoctypeRefused()
