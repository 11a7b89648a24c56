"""The log as C2SP tlog-tiles resources (https://c2sp.org/tlog-tiles): what ``/ledger/``
serves (``web/api_tiles.py``) and ``ledger entries`` prints.

- ``checkpoint``: the latest signed checkpoint (``checkpoints.py``).
- ``tile/<L>/<N>[.p/<W>]``: the hashes of tile ``N`` of level ``L`` (``tiles.py``), all 256
  or, partial, the first ``W``. ``N`` is written in groups of three digits, all but the
  last prefixed with ``x`` (1234067: ``x001/x234/067``).
- ``tile/entries/<N>[.p/<W>]``: the entries ``N * 256`` on (256, or ``W``), each as a
  big-endian 16-bit length and the entry's bytes: its canonical JSON (``entries.py``), the
  very bytes whose SHA-256 after a 0 byte is its leaf hash in tile 0/N.

Whatever lies within the head's size is served: a partial tile of any width up to the
edge (so that of every size a checkpoint signed), a full one once the log has reached it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from imixs_archive.errors import IntegrityError, NotFoundError
from imixs_archive.ledger.books import LedgerBooks, Logged
from imixs_archive.ledger.tiles import WIDTH, TileReader
from imixs_archive.ledger.tree import TreeState

MAX_LEVEL = 63
MAX_ENTRY_BYTES = 0xFFFF
"""An entry's bytes in a bundle: its length is a 16-bit number."""
_INDEX = re.compile(r"(?:x[0-9]{3}/)*[0-9]{3}\Z")
_WIDTH = re.compile(r"[1-9][0-9]{0,2}\Z")
_LEVEL = re.compile(r"(?:0|[1-9][0-9]?)\Z")


@dataclass(frozen=True)
class TilePath:
    level: int | None
    """None: an entry bundle."""
    idx: int
    width: int
    """256: a full tile."""

    @property
    def full(self) -> bool:
        return self.width == WIDTH


def index_path(idx: int) -> str:
    """``N`` of a tile path: three digits a group, all but the last after an ``x``."""
    groups = [f"{idx % 1000:03d}"]
    idx //= 1000
    while idx:
        groups.append(f"x{idx % 1000:03d}")
        idx //= 1000
    return "/".join(reversed(groups))


def tile_path(level: int | None, idx: int, width: int = WIDTH) -> str:
    """The path of a tile (level None: an entry bundle) under ``tile/``."""
    head = "entries" if level is None else str(level)
    tail = "" if width == WIDTH else f".p/{width}"
    return f"{head}/{index_path(idx)}{tail}"


def parse_tile_path(path: str) -> TilePath:
    """A path under ``tile/`` as the spec writes it; NotFoundError for any other."""
    head, _, rest = path.partition("/")
    level: int | None = None
    if head != "entries":
        if not _LEVEL.match(head) or int(head) > MAX_LEVEL:
            raise NotFoundError(f"no tile {path!r}: the level is 0 to {MAX_LEVEL}")
        level = int(head)
    number, partial, width_text = rest.partition(".p/")
    if not _INDEX.match(number) or (partial and not _WIDTH.match(width_text)):
        raise NotFoundError(f"no tile {path!r}: not a tlog-tiles path")
    width = int(width_text) if partial else WIDTH
    idx = int(number.replace("x", "").replace("/", ""))
    if (partial and width >= WIDTH) or index_path(idx) != number:
        raise NotFoundError(f"no tile {path!r}: not a tlog-tiles path")
    return TilePath(level, idx, width)


def tile_data(books: LedgerBooks, head: TreeState | None, path: TilePath) -> bytes:
    """What ``tile/<path>`` serves; NotFoundError when the log does not reach it yet."""
    if path.level is None:
        return entry_bundle(books, head, path.idx, path.width)
    data = TileReader(books, head).hashes(path.level, path.idx, path.width)
    if data is None:
        raise NotFoundError(f"the log has no tile {tile_path(path.level, path.idx, path.width)}")
    return data


def require_entries(head: TreeState | None, start: int, stop: int) -> None:
    """NotFoundError unless the log (as of ``head``) holds entries [start, stop)."""
    size = head.size if head is not None else 0
    if not 0 <= start < stop <= size:
        raise NotFoundError(f"the log holds entries 0 to {size - 1}: not {start} to {stop - 1}")


def logged_entries(
    books: LedgerBooks, head: TreeState | None, start: int, stop: int
) -> list[Logged]:
    """Entries [start, stop) of the log, all of them (NotFoundError past the head's size,
    IntegrityError when the store lacks one)."""
    require_entries(head, start, stop)
    found = list(books.entries(start, stop))
    if [logged.idx for logged in found] != list(range(start, stop)):
        raise IntegrityError(f"ledger entries {start} to {stop - 1} are not all in the store")
    return found


def entry_bundle(books: LedgerBooks, head: TreeState | None, idx: int, width: int) -> bytes:
    """Entry bundle ``idx`` of ``width`` entries."""
    out = bytearray()
    for logged in logged_entries(books, head, idx * WIDTH, idx * WIDTH + width):
        data = logged.text.encode("utf-8")
        if len(data) > MAX_ENTRY_BYTES:
            raise IntegrityError(
                f"ledger entry {logged.idx} has {len(data)} bytes: more than a bundle carries"
            )
        out += len(data).to_bytes(2, "big") + data
    return bytes(out)
