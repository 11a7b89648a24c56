"""Cells packed smaller on the embedded store: zstd when that pays, the bytes as given when not.

SQLite has no compression of its own (Cassandra compresses its tables:
``storage/cassandra/cql.py``).
A table whose declaration has a :class:`~imixs_archive.storage.model.Packing` (the pieces of
``documents_data``) gets its cell compressed here on the way in and back on the way out,
so every reader sees the bytes that were put, and hashes are checked over them.

The choice is made per cell, by trying: the cell is compressed with zstd and kept so when
that saves at least ``1 - KEEP_RATIO`` of its size, else stored as given. Already-compressed
content (PDFs, images, archives) costs little to try: zstd gives up on incompressible input
at several GB/s. The choice is recorded in the marker column: NULL for a cell stored as
given (so every cell written before packing existed reads unchanged), else the size of the
bytes the zstd frame holds (the decompressor is told the exact size; any other outcome is
an error, never bytes of another length).

zstd comes from ``zstandard`` (python-zstandard), which releases the interpreter lock while
it works, so packing runs beside the parsing thread. Its objects are not to be shared by
threads at once, so each thread has its own. (pyarrow's zstd, used before, writes the same
frames; importing pyarrow cost every archive process ~0.1 s of CPU, worker processes
included, where zstandard takes ~0.03 s.)

Pieces are read again and again: an attachment carried from snapshot to snapshot is read
once for each snapshot that holds it. The last ``UNPACKED_BYTES`` of pieces' frames
unpacked are kept with their bytes; a frame read again is compared with the kept one byte
for byte (memcmp, several times faster than unpacking it) and, equal, gives the same bytes
object: zstd is deterministic, so equal frames hold equal bytes. The reader's hash check
then finds the very bytes it checked before (``filestore/reading.py``). A frame changed in the
store since differs, is unpacked, and is checked anew.
"""

from __future__ import annotations

import threading
from typing import Any

from imixs_archive.recent import Recent

KEEP_RATIO = 0.9
"""A compressed cell is kept when it is at most this fraction of the bytes (the same
threshold as Cassandra's ``min_compress_ratio`` 1.1 on the pieces' table)."""
MIN_SIZE = 256
"""Cells shorter than this are stored as given (a zstd frame has ~10 bytes of header)."""
DEFAULT_LEVEL = 3
"""zstd's own default level."""
UNPACKED_BYTES = 32 * 1024 * 1024
"""Pieces' frames unpacked lately, kept with their bytes (per process; both counted)."""
FINGERPRINT = 32
"""Bytes from each end of a frame that, with its size, key it among those kept."""


class UnpackError(ValueError):
    """A packed cell that does not decompress to the size recorded with it, or a cell that a
    damaged page left holding what its column cannot (a NULL key, a date that is none)."""


class _PerThread(threading.local):
    def __init__(self) -> None:
        self.compressors: dict[int, Any] = {}
        self.decompressor: Any = None


_local = _PerThread()


def _zstd() -> Any:
    """python-zstandard, imported on first use: the CLI starts without it."""
    import zstandard

    return zstandard


def _compressor(level: int) -> Any:
    compressor = _local.compressors.get(level)
    if compressor is None:
        compressor = _local.compressors[level] = _zstd().ZstdCompressor(level=level)
    return compressor


def _decompressor() -> Any:
    if _local.decompressor is None:
        _local.decompressor = _zstd().ZstdDecompressor()
    return _local.decompressor


def pack(data: Any, level: int = DEFAULT_LEVEL) -> tuple[Any, int | None]:
    """``(cell, marker)``: a zstd frame and the size of ``data`` when that pays, else
    ``(data, None)``."""
    size = len(data) if not isinstance(data, memoryview) else data.nbytes
    if size < MIN_SIZE:
        return data, None
    packed: bytes = _compressor(level).compress(data)
    if len(packed) > size * KEEP_RATIO:
        return data, None
    # A copy: zstandard's answer keeps the allocation of the largest possible frame.
    return bytes(memoryview(packed)), size


def kept_size(kept: tuple[bytes, bytes]) -> int:
    """Bytes a kept frame holds: the frame and what it unpacked to."""
    return len(kept[0]) + len(kept[1])


_unpacked: Recent[tuple[int, int, bytes, bytes], tuple[bytes, bytes]] = Recent(
    UNPACKED_BYTES, kept_size
)


def unpack(cell: Any, marker: int | None, *, again: bool = False) -> Any:
    """The bytes a cell holds: ``cell`` itself when ``marker`` is NULL. ``again``: a cell
    likely read again (a piece): kept unpacked, and given from there when the frame read
    is the same, byte for byte."""
    if marker is None or cell is None:
        return cell
    if not isinstance(cell, bytes | bytearray | memoryview):  # overwritten with text
        raise UnpackError(f"it holds {type(cell).__name__}, not a zstd frame")
    if not again:
        return _decompress(cell, marker)
    frame = bytes(cell)
    key = (marker, len(frame), frame[:FINGERPRINT], frame[-FINGERPRINT:])
    kept = _unpacked.get(key)
    if kept is not None and kept[0] == frame:
        return kept[1]
    data = _decompress(frame, marker)
    _unpacked.add(key, (frame, data))
    return data


def _decompress(cell: Any, marker: int) -> bytes:
    zstd = _zstd()
    try:
        # The frame's header says how much it holds, and the decompressor would allocate
        # that much at once: a damaged header must not ask for terabytes.
        declared = zstd.frame_content_size(cell)
        if declared not in (-1, marker):
            raise UnpackError(f"its zstd frame says it holds {declared} bytes, not {marker}")
        data: bytes = _decompressor().decompress(cell, max_output_size=marker)
    except (zstd.ZstdError, ValueError, MemoryError) as exc:
        if isinstance(exc, UnpackError):
            raise
        raise UnpackError(f"its zstd frame does not unpack to {marker} bytes ({exc})") from None
    if len(data) != marker:
        raise UnpackError(f"its zstd frame unpacks to {len(data)} bytes, not {marker}")
    return data
