"""Content-defined chunking of attachment bytes (FastCDC via ``pyfastcdc``).

Bytes arrive pushed, piece by piece, from the XML parser. ``StreamChunker`` collects them
until about ``window`` new bytes are there, cuts, and keeps back the last (possibly
unfinished) chunk, so the cut points are exactly those of cutting the whole content at
once: a chunk's end depends only on the bytes from its start to at most ``max_size``
later, and every chunk that ends before the end of the bytes seen so far is final.

The window is small (``max_size``; it was 4 MiB), so pieces leave the chunker while the
rest of a file is still being parsed and the hashing threads work alongside the parser
also for files of a few MB, where before a file under 4 MiB was hashed only after it had
been read whole, with the parser waiting. The cost is a rescan of the unfinished last
chunk at every cut (about a tenth more scanning).

Parameters: pieces are 32 KiB to 1 MiB (a small Cassandra cell), about 160 KiB on
average (pyfastcdc's average is ``avg_size + min_size``). Pieces are identified by their
SHA-256, so changing these parameters would cost deduplication, not the stored data's
correctness; but a file's digest (``archive_files.digest``, the digest over its pieces'
SHA-256s) depends on where they cut, and the ledger logs that digest for every file
(docs/ledger.md): they are fixed for the life of an archive.

Java's cuts (``FixedChunker``): where the Java service may write files into the same
keyspace, the pieces a file is *stored* in are cut where the Java service cuts them, every
``JAVA_BLOCK`` bytes, so that its ``documents`` rows and the Java service's for one file
can mix in any way and still list the right bytes (``files.py``; docs/java-compatibility.md).
The content-defined cuts are then still made, to hash only: the ledger's digest of a file is
the one over them, however the file is stored.
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
WINDOW = 1024 * 1024
"""New bytes collected before the chunker cuts again."""


class StreamChunker:
    """Push bytes in with :meth:`feed`, get finished chunks out; :meth:`finish` at the end.

    The bytes wait in one buffer that grows to at most ``window`` plus room for the
    unfinished last chunk and never shrinks: no allocation per input piece, no memory
    returned and faulted in again (costly at these sizes). Each finished chunk is copied
    out as ``bytes``."""

    def __init__(self, params: ChunkerParams = DEFAULT_PARAMS, window: int = WINDOW) -> None:
        self._cdc = params.make()
        self._window = window
        self._buffer = bytearray()
        self._start = 0  # the unfinished chunk begins here ...
        self._end = 0  # ... and the bytes end here
        self._new = 0  # bytes fed since the last cut

    def feed(self, data: bytes | memoryview) -> list[bytes]:
        """Chunks completed by this data (often none)."""
        chunks: list[bytes] = []
        view = memoryview(data).cast("B")
        while view:
            room = min(len(view), self._window - self._new)
            self._append(view[:room])
            view = view[room:]
            if self._new >= self._window:
                chunks += self._cut(keep_last=True)
        return chunks

    def finish(self) -> list[bytes]:
        """The remaining chunks; the chunker is empty afterwards."""
        return self._cut(keep_last=False)

    def _append(self, data: memoryview) -> None:
        buffer = self._buffer
        self._new += len(data)
        end = self._end + len(data)
        if end > len(buffer) and self._start:  # move the unfinished chunk to the front
            pending = self._end - self._start
            buffer[:pending] = buffer[self._start : self._end]
            self._start, self._end = 0, pending
            end = pending + len(data)
        room = len(buffer) - self._end
        if len(data) > room:  # grows to window + max_size at most: cuts keep back less
            buffer += data[room:]
            data = data[:room]
        buffer[self._end : self._end + len(data)] = data
        self._end = end

    def _cut(self, *, keep_last: bool) -> list[bytes]:
        self._new = 0
        if self._start == self._end:
            return []
        with memoryview(self._buffer) as whole:
            view = whole[self._start : self._end]
            bounds = [(chunk.offset, chunk.length) for chunk in self._cdc.cut_buf(view)]
            if keep_last:
                bounds.pop()
            chunks = [bytes(view[offset : offset + length]) for offset, length in bounds]
            view.release()
        self._start += sum(len(chunk) for chunk in chunks)
        if self._start == self._end:
            self._start = self._end = 0
        return chunks


JAVA_BLOCK = 1024 * 1024
"""The Java service's piece size (``DocumentSplitter.CHUNK_SIZE``, exactly 1 MiB)."""
CONTENT, JAVA = "content", "java"
"""How the pieces of a file are stored: content-defined, or in the Java service's cuts."""


class FixedChunker:
    """Cuts every ``size`` bytes, as the Java service's ``DocumentSplitter`` does: the
    same interface as :class:`StreamChunker`."""

    def __init__(self, size: int = JAVA_BLOCK) -> None:
        self._size = size
        self._buffer = bytearray()

    def feed(self, data: bytes | memoryview) -> list[bytes]:
        self._buffer += data
        if len(self._buffer) < self._size:
            return []
        cut = len(self._buffer) - len(self._buffer) % self._size
        with memoryview(self._buffer) as view:
            chunks = [bytes(view[at : at + self._size]) for at in range(0, cut, self._size)]
        del self._buffer[:cut]
        return chunks

    def finish(self) -> list[bytes]:
        rest, self._buffer = bytes(self._buffer), bytearray()
        return [rest] if rest else []


def chunk_bytes(data: bytes, params: ChunkerParams = DEFAULT_PARAMS) -> list[bytes]:
    """All chunks of an in-memory content (tests and small values)."""
    chunker = StreamChunker(params)
    return [*chunker.feed(data), *chunker.finish()]
