"""Streaming reader of Imixs XML (``<document>`` or a ``<data>`` collection of them).

Built on the standard library's expat, fed block by block: a ``<data>`` collection yields
each ``<document>`` as soon as it is complete, and with a ``file_sink`` the content of each
attachment (the second value of each entry of the ``$file`` map) is decoded incrementally
and handed to the sink piece by piece, never held whole.

Safety: any DOCTYPE is refused before its first declaration is read, so no entity of any
kind (internal, external, parameter) is ever defined or expanded; nesting deeper than
``ReaderLimits.max_depth`` and values or documents above the other limits are refused
(``HostileInputError``).

Speed: inside a base64 value, once expat has consumed every byte it was given, a following
run of bytes without ``<`` or ``&`` can only be character data of that value; it goes to the
base64 decoder directly instead of through expat (which would build Python strings of it
first). Positions in later error messages account for the bytes that went around expat.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol
from xml.parsers import expat

from imixs_archive.budget import checkpoint
from imixs_archive.document.base64_stream import Base64Decoder
from imixs_archive.document.lexical import is_scalar_type, parse_value
from imixs_archive.document.model import Document
from imixs_archive.errors import DocumentError, HostileInputError

XS_NS = "http://www.w3.org/2001/XMLSchema"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
_XSI_TYPE = XSI_NS + " type"
_XSI_NIL = XSI_NS + " nil"
READ_BLOCK = 64 * 1024
"""Bytes read from a file object per step."""

_DATA, _DOCUMENT, _ITEM, _MAP, _LIST, _TEXT, _BINARY, _NIL = range(8)
_FILE_ITEM = "$file"
_BASE64 = "xs:base64Binary"


class BinarySink(Protocol):
    """Receives the bytes of one attachment while it is being read."""

    def write(self, piece: bytes) -> None: ...

    def close(self) -> Any:
        """The value to put into the document in place of the bytes."""
        ...

    def abort(self) -> None:
        """Reading this document failed: release what was written."""
        ...


SinkFactory = Callable[[str], BinarySink]
"""Called with the file name (the key inside ``$file``) when a file's content starts."""


class _Discarding:
    def write(self, piece: bytes) -> None:
        return None

    def close(self) -> bytes:
        return b""

    def abort(self) -> None:
        return None


def discard_files(_name: str) -> BinarySink:
    """A ``file_sink`` that drops attachment bytes as they stream past (the document keeps
    empty contents): for reading only the items of documents that may carry large files."""
    return _Discarding()


@dataclass(frozen=True)
class ReaderLimits:
    """Bounds on what one input may make the reader hold or do."""

    max_depth: int = 64
    """Element nesting depth."""
    max_inline_binary: int = 64 * 2**20
    """Bytes of one base64Binary value held in memory (not streamed to a sink)."""
    max_text: int = 64 * 2**20
    """Characters of one string (or other non-binary) value."""
    max_held_text: int = 128 * 2**20
    """Characters of text values held at once: those of one document (XML streams its
    documents) or of one JSON input (read whole)."""
    max_items: int = 100_000
    """``<item>`` plus ``<value>`` elements in one document."""
    max_token: int = 2**20
    """Bytes of one tag (with its attribute values), comment or processing instruction.
    Imixs XML has none above a few hundred bytes; expat 2.5 needs time quadratic in a
    token's size (CVE-2023-52425: Python's ``Parse`` feeds it 1 MiB at a time and each
    piece scans the unfinished token again), so large ones are refused."""


class _MemorySink:
    """Collects a base64Binary value that is not streamed, up to a limit."""

    __slots__ = ("_data", "_limit")

    def __init__(self, limit: int) -> None:
        self._data = bytearray()
        self._limit = limit

    def write(self, piece: bytes) -> None:
        if len(self._data) + len(piece) > self._limit:
            raise HostileInputError(f"a binary value is larger than {self._limit} bytes")
        self._data += piece

    def close(self) -> bytes:
        return bytes(self._data)

    def abort(self) -> None:
        self._data = bytearray()


class _Frame:
    """One open element."""

    __slots__ = ("decoder", "doc", "entries", "kind", "name", "sink", "size", "text", "values")

    def __init__(self, kind: int, name: str = "") -> None:
        self.kind = kind
        self.name = name
        self.values: list[Any] = []
        self.entries: dict[str, list[Any]] = {}
        self.text: list[str] = []
        self.size = 0
        self.doc: Document | None = None
        self.decoder: Base64Decoder | None = None
        self.sink: BinarySink | None = None


class _Builder:
    """Turns expat events into documents."""

    def __init__(
        self, file_sink: SinkFactory | None, limits: ReaderLimits, encoding: str | None = None
    ) -> None:
        self._file_sink = file_sink
        self._limits = limits
        self._stack: list[_Frame] = []
        self._ready: collections.deque[Document] = collections.deque()
        self._namespaces: dict[str | None, list[str]] = {}
        self._open_sinks: list[BinarySink] = []
        self._count = 0
        self._held_text = 0
        self._in_cdata = False
        self._expat_fed = 0  # bytes given to expat
        self._held: list[bytes] = []  # blocks held back while expat has a long token
        self._held_size = 0
        self._line_shift = 0  # newlines in bytes that went around expat
        self._col_shift = (0, 0)  # (expat line, columns to add on that line)
        self._parser = parser = expat.ParserCreate(encoding, namespace_separator=" ")
        parser.buffer_text = False
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._refuse_doctype
        parser.EntityDeclHandler = self._refuse_entity
        parser.ExternalEntityRefHandler = self._refuse_external_entity
        parser.StartNamespaceDeclHandler = self._start_namespace
        parser.EndNamespaceDeclHandler = self._end_namespace
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._text
        parser.StartCdataSectionHandler = self._start_cdata
        parser.EndCdataSectionHandler = self._end_cdata

    # -- feeding -------------------------------------------------------------------------

    def feed(self, block: bytes) -> None:
        if self._can_bypass():
            stop = _markup_start(block)
            if stop:
                self._bypass(block[:stop] if stop < len(block) else block)
                block = block[stop:]
        if block:
            self._parse_deferred(block)

    def _parse_deferred(self, block: bytes) -> None:
        """Expat (before 2.6) scans an unfinished token (a long attribute value, a
        comment) again from its start with every block it is given: quadratic in the
        token. So while expat holds such a token, blocks are held back until they at
        least double what it holds (each byte is then scanned a bounded number of times),
        and a token past ``max_token`` is refused. After ``Parse`` returns, expat's
        ``CurrentByteIndex`` is where its unfinished token starts."""
        self._held.append(block)
        self._held_size += len(block)
        pending = self._expat_fed - max(self._parser.CurrentByteIndex, 0)
        if pending > self._limits.max_token:
            raise HostileInputError(
                f"a tag, attribute value or comment larger than {self._limits.max_token} bytes",
                self._where(),
            )
        if self._held_size < pending:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held, self._held_size = [], 0
        self._parse(data, final=False)

    def close(self) -> None:
        if self._held:
            data, self._held, self._held_size = b"".join(self._held), [], 0
            self._parse(data, final=False)
        self._parse(b"", final=True)
        if self._stack:  # pragma: no cover - expat reports unclosed elements itself
            raise DocumentError("unexpected end of input", self._where())

    def take_ready(self) -> Iterator[Document]:
        while self._ready:
            yield self._ready.popleft()

    def abort(self) -> None:
        sinks, self._open_sinks = self._open_sinks, []
        for sink in sinks:
            sink.abort()

    def _parse(self, block: bytes, final: bool) -> None:
        try:
            self._parser.Parse(block, final)
        except expat.ExpatError as exc:
            message = expat.errors.messages[exc.code] if exc.code else str(exc)
            where = self._position(exc.lineno, exc.offset)
            raise DocumentError(f"malformed XML: {message}", where) from None
        except (LookupError, UnicodeError) as exc:  # an encoding Python does not know
            raise DocumentError(f"malformed XML: unsupported encoding ({exc})") from None
        self._expat_fed += len(block)

    def _can_bypass(self) -> bool:
        """True when the next bytes continue the text of the open base64 value."""
        return (
            bool(self._stack)
            and self._stack[-1].kind == _BINARY
            and not self._in_cdata
            and not self._held
            and self._parser.CurrentByteIndex == self._expat_fed
        )

    def _bypass(self, text: bytes) -> None:
        frame = self._stack[-1]
        assert frame.decoder is not None
        line, column = self._parser.CurrentLineNumber, self._parser.CurrentColumnNumber
        newlines = text.count(b"\n") if b"\n" in text else 0
        if newlines:
            self._line_shift += newlines
            self._col_shift = (line, len(text) - text.rfind(b"\n") - 1 - column)
        elif self._col_shift[0] == line:
            self._col_shift = (line, self._col_shift[1] + len(text))
        else:
            self._col_shift = (line, len(text))
        self._decode(frame.decoder, text)

    # -- safety --------------------------------------------------------------------------

    def _refuse_doctype(self, *_: object) -> None:
        raise HostileInputError(
            "a DOCTYPE/DTD is not allowed in an Imixs document (entities are refused)",
            self._where(),
        )

    def _refuse_entity(self, *_: object) -> None:  # pragma: no cover - DOCTYPE refused first
        raise HostileInputError("entity declarations are not allowed", self._where())

    def _refuse_external_entity(self, *_: object) -> int:  # pragma: no cover - as above
        raise HostileInputError("external entities are not allowed", self._where())

    # -- namespaces ----------------------------------------------------------------------

    def _start_namespace(self, prefix: str | None, uri: str) -> None:
        self._namespaces.setdefault(prefix, []).append(uri)

    def _end_namespace(self, prefix: str | None) -> None:
        self._namespaces[prefix].pop()

    def _resolve_type(self, raw: str) -> str:
        """``xsi:type`` value -> ``xs:<name>`` for XML Schema types, else the local name."""
        raw = raw.strip()
        prefix, colon, local = raw.rpartition(":")
        uris = self._namespaces.get(prefix if colon else None)
        uri = uris[-1] if uris else None
        if uri == XS_NS:
            return "xs:" + local
        if uri is None:
            return raw  # undeclared prefix: taken literally (``xs:int``, ``xmlItem``)
        return "{" + uri + "}" + local

    # -- elements ------------------------------------------------------------------------

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        stack = self._stack
        if len(stack) >= self._limits.max_depth:
            raise HostileInputError(
                f"elements nested deeper than {self._limits.max_depth}", self._where()
            )
        local = tag.rpartition(" ")[2]
        if not stack:
            self._start_root(local)
            return
        kind = stack[-1].kind
        if kind == _DATA and local == "document":
            self._start_document()
        elif kind in (_DOCUMENT, _MAP) and local == "item":
            self._count_element()
            name = attrs.get("name")
            if name is None:
                raise DocumentError("an <item> without a name attribute", self._where())
            stack.append(_Frame(_ITEM, name))
        elif kind in (_ITEM, _LIST) and local == "value":
            self._count_element()
            self._start_value(attrs)
        else:
            raise DocumentError(f"unexpected element <{local}>", self._where())

    def _start_root(self, local: str) -> None:
        if local == "document":
            self._start_document()
        elif local == "data":
            self._stack.append(_Frame(_DATA))
        else:
            raise DocumentError(
                f"not an Imixs document: the root element is <{local}>, "
                "expected <document> or <data>",
                self._where(),
            )

    def _start_document(self) -> None:
        frame = _Frame(_DOCUMENT)
        frame.doc = Document()
        self._count = 0
        self._held_text = 0
        self._stack.append(frame)

    def _count_element(self) -> None:
        self._count += 1
        if self._count > self._limits.max_items:
            raise HostileInputError(
                f"a document with more than {self._limits.max_items} items and values",
                self._where(),
            )

    def _start_value(self, attrs: dict[str, str]) -> None:
        nil = attrs.get(_XSI_NIL)
        if nil is not None and nil.strip() in ("true", "1"):
            self._stack.append(_Frame(_NIL))
            return
        raw_type = attrs.get(_XSI_TYPE)
        xs_type = "xs:string" if raw_type is None else self._resolve_type(raw_type)
        if xs_type == "xmlItemArray":
            self._stack.append(_Frame(_MAP))
        elif xs_type == "xmlItem":
            self._stack.append(_Frame(_LIST))
        elif xs_type == _BASE64:
            frame = _Frame(_BINARY)
            frame.sink = self._open_sink()
            frame.decoder = Base64Decoder(frame.sink.write)
            self._stack.append(frame)
        elif is_scalar_type(xs_type):  # other ``xs:*`` types are kept as TypedText
            self._stack.append(_Frame(_TEXT, xs_type))
        else:
            raise DocumentError(f"unknown value type {raw_type!r}", self._where())

    def _open_sink(self) -> BinarySink:
        """The sink of a base64 value: the file sink for attachment contents, else memory."""
        stack = self._stack
        sink: BinarySink
        if (
            self._file_sink is not None
            and len(stack) >= 4
            and stack[-1].kind == _ITEM
            and len(stack[-1].values) == 1
            and stack[-2].kind == _MAP
            and stack[-3].kind == _ITEM
            and stack[-3].name.strip().lower() == _FILE_ITEM
            and stack[-4].kind == _DOCUMENT
        ):
            sink = self._file_sink(stack[-1].name)
        else:
            sink = _MemorySink(self._limits.max_inline_binary)
        self._open_sinks.append(sink)
        return sink

    def _end(self, _tag: str) -> None:
        frame = self._stack.pop()
        kind = frame.kind
        if kind == _TEXT:
            try:
                value = parse_value(frame.name, "".join(frame.text), "")
            except DocumentError as exc:
                raise DocumentError(exc.reason, self._where()) from None
            self._stack[-1].values.append(value)
        elif kind == _BINARY:
            self._stack[-1].values.append(self._finish_binary(frame))
        elif kind == _NIL:
            self._stack[-1].values.append(None)
        elif kind == _MAP:
            self._stack[-1].values.append(frame.entries)
        elif kind == _LIST:
            self._stack[-1].values.append(_unless_empty(frame.values))
        elif kind == _ITEM:
            self._end_item(frame)
        elif kind == _DOCUMENT:
            assert frame.doc is not None
            self._ready.append(frame.doc)

    def _finish_binary(self, frame: _Frame) -> Any:
        assert frame.decoder is not None and frame.sink is not None
        try:
            frame.decoder.finish()
        except ValueError as exc:
            raise DocumentError(str(exc), self._where()) from None
        self._open_sinks.remove(frame.sink)
        return frame.sink.close()

    def _end_item(self, frame: _Frame) -> None:
        values = _unless_empty(frame.values)
        parent = self._stack[-1]
        if parent.kind == _MAP:
            parent.entries[frame.name] = values
            return
        assert parent.doc is not None
        if not frame.name.strip():
            raise DocumentError("an item name must not be empty", self._where())
        parent.doc.set_read(frame.name, values)  # values of the reader's own making

    # -- text ----------------------------------------------------------------------------

    def _text(self, text: str) -> None:
        if not self._stack:  # pragma: no cover - expat reports no text outside the root
            return
        frame = self._stack[-1]
        kind = frame.kind
        if kind == _BINARY:
            assert frame.decoder is not None
            self._decode(frame.decoder, text)
        elif kind == _TEXT:
            frame.text.append(text)
            frame.size += len(text)
            self._held_text += len(text)
            if frame.size > self._limits.max_text:
                raise HostileInputError(
                    f"a value longer than {self._limits.max_text} characters", self._where()
                )
            if self._held_text > self._limits.max_held_text:
                raise HostileInputError(
                    f"a document with more than {self._limits.max_held_text} characters of "
                    "text values",
                    self._where(),
                )
        elif not text.isspace():
            shown = text.strip()[:20]
            raise DocumentError(f"unexpected text {shown!r}", self._where())

    def _decode(self, decoder: Base64Decoder, text: str | bytes) -> None:
        try:
            decoder.feed(text)
        except ValueError as exc:
            raise DocumentError(str(exc), self._where()) from None

    def _start_cdata(self) -> None:
        self._in_cdata = True

    def _end_cdata(self) -> None:
        self._in_cdata = False

    # -- positions -----------------------------------------------------------------------

    def _position(self, line: int, column: int) -> str:
        if self._col_shift[0] == line:
            column += self._col_shift[1]
        return f"line {line + self._line_shift}, column {column + 1}"

    def _where(self) -> str:
        parser = self._parser
        position = self._position(parser.CurrentLineNumber, parser.CurrentColumnNumber)
        names = [repr(frame.name) for frame in self._stack if frame.kind == _ITEM]
        return f"item {' > '.join(names)}, {position}" if names else position


def _unless_empty(values: list[Any]) -> list[Any]:
    """Imixs (``XMLItem.setValue``) writes an empty list as one nil value, at every level."""
    return [] if len(values) == 1 and values[0] is None else values


def _markup_start(block: bytes) -> int:
    """Index of the first ``<`` or ``&`` (the end of plain character data), else the length."""
    stop = block.find(b"<")
    if stop < 0:
        stop = len(block)
    amp = block.find(b"&", 0, stop)
    return stop if amp < 0 else amp


def _blocks(source: BinaryIO | Iterable[bytes]) -> Iterator[bytes]:
    if isinstance(source, bytes | bytearray | memoryview):
        yield bytes(source)
    elif hasattr(source, "read"):
        while block := source.read(READ_BLOCK):
            yield block
    else:
        for block in source:
            if block:
                yield bytes(block)


def iter_xml_documents(
    source: BinaryIO | Iterable[bytes],
    *,
    file_sink: SinkFactory | None = None,
    limits: ReaderLimits = ReaderLimits(),
) -> Iterator[Document]:
    """The documents of an Imixs XML input, each as soon as it is complete.

    ``source`` is a binary file object or an iterable of byte blocks (e.g. an HTTP body).
    With ``file_sink``, attachment contents go to the sinks it makes and the document holds
    what ``sink.close()`` returns; without, they are read into ``bytes``. On any error
    (and when the caller stops early) every sink still open is aborted.
    """
    return _iter_documents(_blocks(source), file_sink, limits, None)


def _iter_documents(
    blocks: Iterable[bytes],
    file_sink: SinkFactory | None,
    limits: ReaderLimits,
    encoding: str | None,
) -> Iterator[Document]:
    builder = _Builder(file_sink, limits, encoding)
    try:
        for block in blocks:
            checkpoint()  # the request that sent it may be gone, or out of time
            builder.feed(block)
            yield from builder.take_ready()
        builder.close()
        yield from builder.take_ready()
    except BaseException:
        builder.abort()
        raise


def read_xml(data: bytes | str) -> list[Document]:
    """All documents of an XML input held in memory."""
    encoding = None
    if isinstance(data, str):
        data, encoding = data.encode("utf-8"), "UTF-8"
    blocks = (data[start : start + READ_BLOCK] for start in range(0, len(data), READ_BLOCK))
    return list(_iter_documents(blocks, None, ReaderLimits(), encoding))


def read_xml_document(data: bytes | str) -> Document:
    """The one document of an XML input; a ``DocumentError`` unless there is exactly one."""
    docs = read_xml(data)
    if len(docs) != 1:
        raise DocumentError(f"expected exactly one document, found {len(docs)}")
    return docs[0]
