"""Responses that stream from the store: attachments (with ranges) and snapshot XML.

Attachments: ``Content-Length`` from the stored size, ``Accept-Ranges: bytes``, one
``Range: bytes=a-b`` answered with 206 (several ranges, or a malformed header, get the
whole file, as RFC 9110 allows), an unsatisfiable one with 416. Stored pieces before the
range are skipped by their recorded sizes, without reading them; pieces after it are not
read. Every piece is checked as it is read (``filestore/reading.py``): the first one
before the answer starts, so a file that is bad from its start gets a 502 integrity problem; a bad
piece later cuts the connection short of ``Content-Length`` (or of the last chunk), so
no client can take the rest for the whole file. Files are served with
``Content-Security-Policy: sandbox`` and ``nosniff``: an HTML attachment opened from the
archive cannot run script in the archive's origin.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain
from urllib.parse import quote

from starlette.convertors import Convertor
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from imixs_archive.document.model import BinaryStream, Document
from imixs_archive.document.xml_writer import DECLARATION, NAMESPACES, iter_xml
from imixs_archive.web.problems import problem

_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)
XML = "application/xml"
FORMATS = {
    "application/xml": "xml",
    "text/xml": "xml",
    "application/json": "json",
    "text/html": "html",
    "application/xhtml+xml": "html",
}


def negotiate(request: Request, explicit: str | None, default: str = "xml") -> str:
    """``xml``, ``json`` or ``html``: the ``format`` parameter, else the best Accept entry."""
    if explicit:
        return explicit.lower()
    accepted: list[tuple[float, int, str]] = []
    for index, part in enumerate(request.headers.get("accept", "").split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if media.lower() in FORMATS and quality > 0:
            accepted.append((-quality, index, FORMATS[media.lower()]))
    return min(accepted)[2] if accepted else default


# type/subtype with parameters, nothing a header cannot carry; anything else is served as
# application/octet-stream (a CR/LF in a stored content type would break the answer).
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]+"
_MEDIA_TYPE = re.compile(
    rf'{_TOKEN}/{_TOKEN}(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|"[^"\x00-\x1f\x7f-\uffff]*"))*'
)
OCTETS = "application/octet-stream"


class AnyNameConvertor(Convertor[str]):
    """A path parameter that runs to the end of the path, newlines included."""

    regex = "[\\s\\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


def safe_media_type(content_type: str) -> str:
    text = content_type.strip()
    return text if _MEDIA_TYPE.fullmatch(text) else OCTETS


def disposition(name: str, attachment: bool) -> str:
    fallback = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name
    )
    kind = "attachment" if attachment else "inline"
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def parse_range(header: str, size: int) -> tuple[int, int] | bool | None:
    """(first, last) byte of a satisfiable single range; False when unsatisfiable;
    None when the header is to be ignored (malformed, several ranges)."""
    match = _RANGE.match(header)
    if match is None:
        return None
    first, last = match.group(1), match.group(2)
    if not first and not last:
        return None
    if not first:  # suffix: the last N bytes
        count = int(last)
        if count == 0 or size == 0:
            return False
        return max(0, size - count), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if last and int(last) < start:
        return None
    if start >= size:
        return False
    return start, end


def file_response(
    request: Request,
    content: BinaryStream,
    content_type: str,
    *,
    name: str | None = None,
    etag: str | None = None,
    attachment: bool = False,
) -> Response:
    size = content.size
    content_type = safe_media_type(content_type)
    headers = {
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox",
        "Accept-Ranges": "bytes" if size is not None else "none",
    }
    if etag:
        headers["ETag"] = f'"{etag}"'
    if name is not None:
        headers["Content-Disposition"] = disposition(name, attachment)
    if size is None:  # Java-written file without our size record: no length, no ranges
        body = _primed(content.iter_bytes())
        return StreamingResponse(body, media_type=content_type, headers=headers)
    wanted = request.headers.get("range")
    if_range = request.headers.get("if-range")
    if wanted and (if_range is None or (etag is not None and if_range.strip('"') == etag)):
        parsed = parse_range(wanted, size)
        if parsed is False:
            return problem(
                416,
                f"range {wanted!r} is outside the file ({size} bytes)",
                {"Content-Range": f"bytes */{size}"},
            )
        if isinstance(parsed, tuple):
            first, last = parsed
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
            headers["Content-Length"] = str(last - first + 1)
            body = _primed(content.iter_range(first, last))
            return StreamingResponse(body, 206, headers, media_type=content_type)
    headers["Content-Length"] = str(size)
    body = _primed(content.iter_bytes())
    return StreamingResponse(body, 200, headers, media_type=content_type)


def headers_only(request: Request, response: Response) -> Response:
    """For ``HEAD`` (as JAX-RS answers it for every GET resource of the Java service): the
    answer's status and headers, its body left unread (a file's pieces past the first, a
    snapshot's XML); for any other method the answer itself."""
    if request.method != "HEAD":
        return response
    head = Response(status_code=response.status_code)
    head.raw_headers = list(response.raw_headers)
    return head


def _primed(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """The pieces, the first one read now: an error there becomes a problem answer."""
    first = next(pieces, None)
    return pieces if first is None else chain([first], pieces)


def xml_response(doc: Document, *, collection: bool = True) -> Response:
    """A snapshot as ``<data><document>`` (as the Java service answers), streamed."""
    return StreamingResponse(iter_xml(doc, collection=collection), media_type=XML)


_HEAD = re.compile(rb"\s*(<\?xml\s[^>]*\?>)?\s*(?=<document[\s/>])")
_ENCODING = re.compile(rb"""\sencoding\s*=\s*["']([^"']*)["']""")
_DATA_OPEN = f"{DECLARATION}<data{NAMESPACES}>\n".encode()


def stored_xml_response(pieces: Iterator[bytes]) -> Response | None:
    """One snapshot's XML (root ``<document>``: its stored bytes with its files, as the
    CLI's ``get`` writes them) answered as ``<data><document>``, as the Java service
    answers, without parsing and writing it again (``in_data``); None when it cannot be
    (the caller answers from the parsed snapshot)."""
    body = in_data(pieces)
    return None if body is None else StreamingResponse(body, media_type=XML)


def in_data(pieces: Iterator[bytes]) -> Iterator[bytes] | None:
    """The XML of one ``<document>`` as a ``<data>`` of it: the same document, the inner
    root keeping its own namespace declarations. None when the head is not a UTF-8
    ``<document>``."""
    first = next(pieces, b"")
    head = _HEAD.match(first)
    if head is None:
        return None
    declared = _ENCODING.search(head.group(1) or b"")
    if declared is not None and declared.group(1).lower() not in (b"utf-8", b"utf8"):
        return None
    return chain([_DATA_OPEN + first[head.end() :]], pieces, [b"</data>\n"])
