"""Content-defined chunking of attachment bytes (FastCDC via ``pyfastcdc``).

Bytes arrive pushed, piece by piece, from the XML parser. ``StreamChunker`` buffers a
window, cuts it, and keeps back the last (possibly unfinished) chunk, so the cut points
are exactly those of cutting the whole content at once: a chunk's end depends only on
the bytes from its start to at most ``max_size`` later.

Parameters: pieces are 32 KiB to 1 MiB (a small Cassandra cell), about 160 KiB on
average (pyfastcdc's average is ``avg_size + min_size``). Pieces are identified by their
SHA-256, so changing these parameters later only costs deduplication, never correctness.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyfastcdc import FastCDC


@dataclass(frozen=True)
class ChunkerParams:
    min_size: int = 32 * 1024
    avg_size: int = 128 * 1024
    max_size: int = 1024 * 1024

    def make(self) -> FastCDC:
        return FastCDC(self.avg_size, min_size=self.min_size, max_size=self.max_size)


DEFAULT_PARAMS = ChunkerParams()


class StreamChunker:
    """Push bytes in with :meth:`feed`, get finished chunks out; :meth:`finish` at the end."""

    def __init__(self, params: ChunkerParams = DEFAULT_PARAMS) -> None:
        self._cdc = params.make()
        self._window = 4 * params.max_size
        self._buffer = bytearray()

    def feed(self, data: bytes | memoryview) -> list[bytes]:
        """Chunks completed by this data (often none)."""
        self._buffer += data
        if len(self._buffer) < self._window:
            return []
        return self._cut(keep_last=True)

    def finish(self) -> list[bytes]:
        """The remaining chunks; the chunker is empty afterwards."""
        return self._cut(keep_last=False)

    def _cut(self, *, keep_last: bool) -> list[bytes]:
        if not self._buffer:
            return []
        with memoryview(self._buffer) as view:
            bounds = [(chunk.offset, chunk.length) for chunk in self._cdc.cut_buf(view)]
            if keep_last:
                bounds.pop()
            chunks = [bytes(view[offset : offset + length]) for offset, length in bounds]
        del self._buffer[: sum(len(chunk) for chunk in chunks)]
        return chunks


def chunk_bytes(data: bytes, params: ChunkerParams = DEFAULT_PARAMS) -> list[bytes]:
    """All chunks of an in-memory content (tests and small values)."""
    chunker = StreamChunker(params)
    return [*chunker.feed(data), *chunker.finish()]
