"""The ledger's tree kept as C2SP tlog-tiles (https://c2sp.org/tlog-tiles): what proofs read
and what ``/ledger/tile/`` serves.

A tile of level ``L`` and index ``N`` holds up to 256 consecutive hashes of the tree: those of
the subtrees of ``256**L`` entries starting at entry ``(N * 256 + i) * 256**L``, 32 bytes each,
concatenated. Level 0 holds the entries' leaf hashes; a hash of level ``L + 1`` is the root of
a full tile of level ``L``. A full tile (256 hashes) never changes; the tiles on the tree's
right edge are partial (the tree of ``size`` entries has ``(size >> 8L) & 255`` hashes in the
partial tile of level L) and grow with the log. The store keeps a row per tile and width
(``archive_ledger_tiles``): the sequencer writes the new, wider row of an edge tile before it
deletes the narrower one, and a full tile before it deletes the partial ones, so the widest
row of a tile always holds at least what the head's size needs; readers take that one and
use its first hashes.

A node of a proof (``tlog.merkle.NodeGetter``: ``2**level`` entries) lies in one tile: the
tile of level ``level // 8`` that holds its first hash; it is the root of ``2**(level % 8)``
of that tile's hashes. An inclusion or a consistency proof so reads about two tiles a level of
tiles (three levels hold 16 million entries), each once (:class:`TileReader` keeps them).

A log begun before the tiles (store version 6) still has a row per node (``put_nodes``);
its tiles are derived from its entries ``CATCH_UP`` entries a sequencing round
(:func:`grow_tiles`), the head's ``tiled`` saying how far they go. Until they cover the log,
the sequencer writes node rows for what it adds, and readers take what lies beyond ``tiled``
from the entries and node rows (:class:`TileReader`): a proof or a tile is served the same
before the tiles are complete as after.
"""

from __future__ import annotations

from collections.abc import Sequence

from imixs_archive.errors import IntegrityError
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.tree import TreeState, read_tree
from imixs_archive.tlog.merkle import HASH_SIZE, leaf_hash, range_hash, root_of

HEIGHT = 8
WIDTH = 1 << HEIGHT
"""Hashes in a full tile."""
CATCH_UP = 32_768
"""Entries of a log older than the tiles whose tiles one sequencing round derives."""


def edge(size: int, level: int) -> tuple[int, int]:
    """(index, width) of the partial tile of ``level`` in a tree of ``size`` entries
    (width 0: there is none)."""
    count = size >> (HEIGHT * level)
    return count >> HEIGHT, count & (WIDTH - 1)


def tile_span(level: int, idx: int, width: int) -> tuple[int, int]:
    """The entries [start, end) the first ``width`` hashes of a tile cover."""
    unit = 1 << (HEIGHT * level)
    return idx * WIDTH * unit, (idx * WIDTH + width) * unit


def _split(data: bytes) -> list[bytes]:
    return [data[i : i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]


class _Growth:
    """The tiles of a tree growing from ``start`` entries: the edge tiles as they are
    there, then every full tile and the new edge tiles as leaves are added."""

    def __init__(self, books: LedgerBooks, start: int) -> None:
        self.books = books
        self.start = start
        self.counts: list[int] = []
        self.edges: list[bytearray] = []
        level = 0
        while start >> (HEIGHT * level):
            idx, width = edge(start, level)
            data = b""
            if width:
                data = (books.tile(level, idx) or b"")[: width * HASH_SIZE]
                if len(data) != width * HASH_SIZE:
                    raise IntegrityError(
                        f"ledger tile {level}/{idx} is missing from the store (or short of "
                        f"{width} hashes)"
                    )
            self.counts.append(start >> (HEIGHT * level))
            self.edges.append(bytearray(data))
            level += 1
        self.full: list[tuple[int, int, bytes]] = []

    def push(self, level: int, digest: bytes) -> None:
        if level == len(self.counts):
            self.counts.append(0)
            self.edges.append(bytearray())
        self.edges[level] += digest
        self.counts[level] += 1
        if self.counts[level] % WIDTH == 0:
            data = bytes(self.edges[level])
            self.full.append((level, (self.counts[level] >> HEIGHT) - 1, data))
            self.edges[level] = bytearray()
            self.push(level + 1, root_of(_split(data)))

    def write(self) -> None:
        """The full tiles and the new edge tiles; then the rows they make needless."""
        books = self.books
        partial = [
            (level, self.counts[level] >> HEIGHT, bytes(data))
            for level, data in enumerate(self.edges)
            if data and self.counts[level] != self.start >> (HEIGHT * level)
        ]
        books.put_tiles(self.full + partial)
        for level, idx, _data in self.full:
            for width in books.tile_widths(level, idx):
                if width < WIDTH:
                    books.drop_tile(level, idx, width)
        for level, idx, _data in partial:
            before, width = edge(self.start, level)
            if before == idx and width:
                books.drop_tile(level, idx, width)


def extend_tiles(books: LedgerBooks, start: int, leaves: Sequence[bytes]) -> int:
    """Write the tiles of the tree of ``start`` entries (whose tiles are there) grown by
    these leaf hashes; the new size."""
    if not leaves:
        return start
    growth = _Growth(books, start)
    for leaf in leaves:
        growth.push(0, leaf)
    growth.write()
    return start + len(leaves)


def grow_tiles(
    books: LedgerBooks,
    state: TreeState,
    leaves: Sequence[bytes],
    nodes: Sequence[tuple[int, int, bytes]],
) -> int:
    """Store the hashes of a round that adds ``leaves`` (and completes ``nodes``) to the
    log of ``state``: as tiles where the tiles cover the log so far; else the next part of
    the older log's tiles and the node rows. How far the tiles go now (the head's
    ``tiled``)."""
    tiled = state.tiled
    if tiled < state.size:
        stop = min(state.size, tiled + CATCH_UP)
        tiled = extend_tiles(books, tiled, _stored_leaves(books, tiled, stop))
    if tiled == state.size:
        return extend_tiles(books, tiled, leaves)
    books.put_nodes(nodes)
    return tiled


def _stored_leaves(books: LedgerBooks, start: int, stop: int) -> list[bytes]:
    """The leaf hashes of entries [start, stop), each checked against its entry."""
    leaves: list[bytes] = []
    for logged in books.entries(start, stop):
        if logged.idx != start + len(leaves):
            break
        if leaf_hash(logged.text.encode("utf-8")) != logged.leaf:
            raise IntegrityError(f"ledger entry {logged.idx} does not match its hash")
        leaves.append(logged.leaf)
    if len(leaves) != stop - start:
        raise IntegrityError(f"ledger entry {start + len(leaves)} is missing from the store")
    return leaves


class TileReader:
    """The tree's hashes as of a head: tiles (and, beyond its ``tiled``, entries and node
    rows), each read once. Its :meth:`node` is a ``NodeGetter`` for proofs."""

    def __init__(self, books: LedgerBooks, state: TreeState | None) -> None:
        self.books = books
        self.size = state.size if state is not None else 0
        self.tiled = state.tiled if state is not None else 0
        self._read: dict[tuple[int, int], bytes] = {}

    def hashes(self, level: int, idx: int, width: int) -> bytes | None:
        """The first ``width`` (1 to 256) hashes of a tile, or None when the log (as of the
        head) does not have them."""
        start, end = tile_span(level, idx, width)
        if not 0 < width <= WIDTH or end > self.size:
            return None
        data = self._read.get((level, idx), b"")
        if len(data) < width * HASH_SIZE:
            if end <= self.tiled:
                data = self.books.tile(level, idx) or b""
            else:
                data = self._from_rows(level, idx, width, start)
            self._read[(level, idx)] = data
        if len(data) < width * HASH_SIZE:
            what = f"ledger tile {level}/{idx} (entries {start} to {end - 1})"
            raise IntegrityError(f"{what} is missing from the store")
        return data[: width * HASH_SIZE]

    def _from_rows(self, level: int, idx: int, width: int, start: int) -> bytes:
        """A tile of a log older than the tiles, where they are not derived yet."""
        if level == 0:
            return b"".join(logged.leaf for logged in self.books.entries(start, start + width))
        return b"".join(self.books.node_run(HEIGHT * level, idx * WIDTH, width))

    def node(self, level: int, idx: int) -> bytes:
        """The hash of the complete subtree of ``2**level`` entries starting at entry
        ``idx * 2**level`` (``tlog.merkle.NodeGetter``)."""
        tile_level, below = divmod(level, HEIGHT)
        first = idx << below
        tile, offset = divmod(first, WIDTH)
        data = self.hashes(tile_level, tile, offset + (1 << below))
        if data is None:
            raise IntegrityError(f"ledger tree node {level}/{idx} lies past the log's head")
        return root_of(_split(data[offset * HASH_SIZE :]))


def tile_reader(books: LedgerBooks) -> TileReader:
    """A reader as of the ledger's head now."""
    return TileReader(books, read_tree(books))


def tile_problem(reader: TileReader, level: int, idx: int, digest: bytes) -> str:
    """What ``ledger verify`` finds of the full tile whose root is the complete subtree
    (``level``, a multiple of 8, ``idx``) it computed from the log: '' when it matches,
    or when the tiles do not reach it yet (a log older than the tiles)."""
    tile_level = level // HEIGHT - 1
    if (idx + 1) << level > reader.tiled:
        return ""
    data = reader.books.tile(tile_level, idx) or b""
    if len(data) < WIDTH * HASH_SIZE or root_of(_split(data[: WIDTH * HASH_SIZE])) != digest:
        return (
            f"ledger tile {tile_level}/{idx} is not the log's (entries {idx << level} to "
            f"{((idx + 1) << level) - 1}): the tree's tiles were changed, and proofs made "
            "from them fail"
        )
    return ""


def edge_problem(reader: TileReader, size: int, root: bytes) -> str:
    """What ``ledger verify`` finds of the tiles as a whole: the tree head of ``size``
    entries read from them is ``root``, the one it computed from the log ('' when so)."""
    if size > reader.tiled or size == 0:
        return ""
    try:
        found = range_hash(0, size, reader.node)
    except IntegrityError as exc:
        return f"the tree's tiles: {exc}"
    if found != root:
        return (
            f"the tree's tiles do not give the head of the log's first {size} entries: they "
            "were changed, and proofs made from them fail"
        )
    return ""
