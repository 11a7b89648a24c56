"""Imixs JSON read from a stream with bounded memory.

The JSON module needs its whole input at once, and attachments make up most of a pushed
JSON body (as base64 strings). So the input is first scanned piece by piece: every string
longer than ``SPOOL_OVER`` bytes goes to a temporary file (memory up to 1 MiB, disk
beyond) and leaves a marker in what remains, the *skeleton*, which is then read by the
JSON codec. An ``xs:base64Binary`` value that was spooled becomes a :class:`BinaryStream`
that decodes from its file as it is read (the archive stores it piece by piece); any other
spooled string is read back as text, decoded as it is read from its file, and refused as
soon as it passes ``ReaderLimits.max_text`` characters, as in XML; the spooled strings of one
input together as soon as they pass ``ReaderLimits.max_held_text`` (the input is read whole:
its documents and their text are all held at once). The skeleton itself (items, small
values) is limited to ``MAX_SKELETON`` bytes. So one input holds at most those limits,
whatever the size of its strings.
"""

from __future__ import annotations

import json
import re
import secrets
import tempfile
from collections.abc import Iterator
from typing import IO, Any, Protocol

from imixs_archive.budget import checkpoint
from imixs_archive.document.base64_stream import Base64Decoder
from imixs_archive.document.json_codec import read_json_skeleton
from imixs_archive.document.model import BinaryStream, Document
from imixs_archive.document.xml_reader import ReaderLimits
from imixs_archive.errors import DocumentError, HostileInputError

SPOOL_OVER = 64 * 1024
"""Strings longer than this (bytes, as written in the JSON) are spooled."""
MAX_SKELETON = 64 * 2**20
"""Bytes of JSON besides the spooled strings: the items of the documents of one input."""
READ_BLOCK = 256 * 1024
_SPOOL_MEMORY = 1024 * 1024
_QUOTE_OR_BACKSLASH = re.compile(rb'["\\]')
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"/": b"/", b"\\": b"\\"}


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class SpooledBase64(BinaryStream):
    """The bytes of a base64 string that was spooled: decoded from the file when read."""

    def __init__(self, spool: IO[bytes], where: str = "") -> None:
        self._spool = spool
        self._where = where

    def iter_bytes(self) -> Iterator[bytes]:
        out: list[bytes] = []
        decoder = Base64Decoder(out.append)
        self._spool.seek(0)
        carry = b""
        try:
            while block := self._spool.read(READ_BLOCK):
                text, carry = _unescape_base64(carry + block)
                decoder.feed(text)
                yield from out
                out.clear()
            if carry:
                raise ValueError("a JSON escape cut short")
            decoder.finish()
        except ValueError as exc:
            raise DocumentError(f"invalid base64 value: {exc}", self._where) from None
        yield from out


def _unescape_base64(raw: bytes) -> tuple[bytes, bytes]:
    """JSON escapes a base64 string may hold (``\\/``, ``\\n`` ...) undone; an escape cut
    by the end of the block is carried to the next."""
    if b"\\" not in raw:
        return raw, b""
    cut = len(raw) - 1 if raw.endswith(b"\\") and not raw.endswith(b"\\\\") else len(raw)
    parts = raw[:cut].split(b"\\")
    text = [parts[0]]
    for part in parts[1:]:
        if not part:
            raise ValueError("an unexpected JSON escape in base64 text")
        replaced = _ESCAPES.get(part[:1])
        if replaced is None:
            raise ValueError(f"the JSON escape \\{part[:1].decode('latin-1')} in base64 text")
        text.append(replaced + part[1:])
    return b"".join(text), raw[cut:]


class _Scanner:
    """Splits the input into the skeleton and spooled strings."""

    def __init__(self) -> None:
        self.skeleton = bytearray()
        self.spools: dict[str, IO[bytes]] = {}
        self.marker = f"\u0000spooled-{secrets.token_hex(6)}-"
        self._in_string = False
        self._escaped = False  # the previous byte inside a string was a lone backslash
        self._current = bytearray()  # the open string, while it is short
        self._spool: IO[bytes] | None = None

    def feed(self, block: bytes) -> None:
        position = 0
        while position < len(block):
            if not self._in_string:
                quote = block.find(b'"', position)
                end = len(block) if quote < 0 else quote + 1
                self._keep(block[position:end])
                position = end
                self._in_string = quote >= 0
                continue
            position = self._string_part(block, position)

    def _string_part(self, block: bytes, position: int) -> int:
        """Consume string bytes from ``position``; returns where scanning continues."""
        start = position
        while True:
            if self._escaped:
                self._escaped = False
                position += 1
                if position >= len(block):
                    self._add(block[start:])
                    return len(block)
            found = _QUOTE_OR_BACKSLASH.search(block, position)
            if found is None:
                self._add(block[start:])
                return len(block)
            if found.group() == b"\\":
                position = found.end()
                if position >= len(block):
                    self._escaped = True
                    self._add(block[start:])
                    return len(block)
                position += 1
                continue
            self._add(block[start : found.start()])
            self._close_string()
            return found.end()

    def _add(self, part: bytes) -> None:
        if self._spool is not None:
            self._spool.write(part)
            return
        self._current += part
        if len(self._current) > SPOOL_OVER:
            self._spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY)  # noqa: SIM115
            self._spool.write(self._current)
            self._current = bytearray()

    def _close_string(self) -> None:
        self._in_string = False
        if self._spool is not None:
            name = f"{self.marker}{len(self.spools)}"
            self.spools[name] = self._spool
            self._spool = None
            self._keep(name.encode("utf-8").replace(b"\x00", b"\\u0000") + b'"')
        else:
            self._keep(bytes(self._current) + b'"')
            self._current = bytearray()

    def _keep(self, part: bytes) -> None:
        self.skeleton += part
        if len(self.skeleton) > MAX_SKELETON:
            raise HostileInputError(
                f"JSON with more than {MAX_SKELETON // 2**20} MiB besides its long strings: "
                "send fewer documents per request (or XML, which streams)"
            )

    def close(self) -> None:
        for spool in self.spools.values():
            spool.close()
        if self._spool is not None:
            self._spool.close()


DEFAULT_LIMITS = ReaderLimits()


def iter_json_stream(source: Readable, limits: ReaderLimits = DEFAULT_LIMITS) -> Iterator[Document]:
    """The documents of an Imixs JSON input read from ``source`` with bounded memory."""
    scanner = _Scanner()
    try:
        while block := source.read(READ_BLOCK):
            checkpoint()  # the request that sent it may be gone
            scanner.feed(block)
        if scanner._in_string:
            raise DocumentError("malformed JSON: unterminated string at the end of the input")
        resolver = _Resolver(scanner, limits)
        yield from read_json_skeleton(bytes(scanner.skeleton), resolver.pairs)
    finally:
        scanner.close()


class _Resolver:
    """Puts the spooled strings back: base64 values as streams, the rest as text."""

    def __init__(self, scanner: _Scanner, limits: ReaderLimits) -> None:
        self._spools = scanner.spools
        self._marker = scanner.marker
        self._limits = limits
        self._held = 0
        """Characters of spooled text put back so far (all of the input's documents)."""

    def pairs(self, pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        typed = any(k == "@type" and v == "xs:base64Binary" for k, v in pairs)
        resolved = []
        for key, value in pairs:
            if typed and key == "$" and isinstance(value, str) and value in self._spools:
                resolved.append((key, SpooledBase64(self._spools[value])))
            else:
                resolved.append((self._text(key), self._walk(value)))
        return resolved

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, list):
            return [self._walk(element) for element in value]
        return value

    def _text(self, value: str) -> str:
        if not value.startswith(self._marker) or value not in self._spools:
            return value
        spool = self._spools[value]
        limit = self._limits.max_text
        spool.seek(0, 2)
        if spool.tell() > limit * 6:  # \uXXXX: 6 bytes a character
            raise HostileInputError(f"a value longer than {limit} characters")
        spool.seek(0)
        decoder = _StringDecoder(min(limit, self._limits.max_held_text - self._held))
        try:
            while block := spool.read(READ_BLOCK):
                decoder.feed(block)
            text = decoder.finish()
        except _TooLong:
            if decoder.limit < limit:
                raise HostileInputError(
                    f"JSON text values of more than {self._limits.max_held_text} characters "
                    "in one input: send fewer documents per request (or XML, which streams)"
                ) from None
            raise HostileInputError(f"a value longer than {limit} characters") from None
        except ValueError as exc:  # json's own message, or UTF-8's
            raise DocumentError(f"malformed JSON in a long string: {exc}") from None
        self._held += len(text)
        return text


class _TooLong(Exception):
    """A string past its limit (the caller says which)."""


_LONGEST_ESCAPE = 12
"""Bytes of the longest escape: a surrogate pair, ``\\uD83D\\uDE00``."""
_BACKSLASH = 0x5C


class _StringDecoder:
    """The text of a JSON string (the bytes between its quotes) decoded block by block by
    ``json.loads`` itself, and refused once it passes ``limit`` characters, so that no more
    than that is ever held.

    Each block is cut where a string may be cut: not inside a UTF-8 sequence, and before
    the first escape among its last 12 bytes (an escape is at most 12 bytes; in a run of
    backslashes the pairs from its start are escapes), the rest carried to the next block.
    A surrogate pair whose halves fall on either side of a cut is joined, as ``json.loads``
    joins it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pieces: list[str] = []
        self._size = 0
        self._carry = b""

    def feed(self, block: bytes, *, final: bool = False) -> None:
        data = self._carry + block if self._carry else block
        cut = len(data) if final else _cut(data)
        self._carry = data[cut:]
        if cut:
            self._add(json.loads('"' + data[:cut].decode("utf-8") + '"'))

    def finish(self) -> str:
        self.feed(b"", final=True)
        return "".join(self._pieces)

    def _add(self, text: str) -> None:
        if not text:
            return
        pieces = self._pieces
        if pieces and "\ud800" <= pieces[-1][-1] <= "\udbff" and "\udc00" <= text[0] <= "\udfff":
            pair = (pieces[-1][-1] + text[0]).encode("utf-16-le", "surrogatepass")
            pieces[-1] = pieces[-1][:-1] + pair.decode("utf-16-le")
            text = text[1:]
            self._size -= 1
        self._size += len(text)
        if self._size > self.limit:
            raise _TooLong
        if text:
            pieces.append(text)


def _cut(data: bytes) -> int:
    """Where ``data`` (the start of a string's text) may be cut: see ``_StringDecoder``."""
    cut = len(data)
    if cut and data[cut - 1] & 0x80:  # perhaps a sequence the next block completes
        cut -= 1
        while cut and data[cut] & 0xC0 == 0x80 and len(data) - cut < 4:
            cut -= 1
    slash = data.find(b"\\", max(0, cut - _LONGEST_ESCAPE), cut)
    if slash >= 0:
        run = slash  # the run of backslashes it is in: pairs from its start are escapes
        while run and data[run - 1] == _BACKSLASH:
            run -= 1
        cut = run + 2 * ((slash - run) // 2)
    return cut
