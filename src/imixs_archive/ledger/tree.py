"""The ledger's head: the ``tree`` book, the one record of how long the log is.

It moves only by compare and set (``LedgerBooks.head.turn``), from one state to the next a
sequencer computed; a state names the tree's size and root, the compact range that lets
the next entries be added without reading the log (``tlog.merkle.Frontier``), the log's
origin and key, the last checkpoint, and the oldest minute of the queue not yet finished.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, replace

from imixs_archive.errors import IntegrityError
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.tlog.merkle import EMPTY_ROOT, Frontier

TREE = "tree"


@dataclass(frozen=True)
class TreeState:
    size: int
    root: bytes
    frontier: bytes
    origin: str
    key: str
    """The verifier key (public) of the key that signs this log's checkpoints."""
    queue_from: int
    """The oldest minute (epoch minutes) of the queue that may still hold entries."""
    checkpoint: str = ""
    """The last signed checkpoint (a note), or empty."""
    checkpoint_size: int = 0
    checkpoint_at: int = 0
    """When it was signed (epoch ms)."""
    tiled: int = 0
    """The first ``tiled`` entries have their tree's hashes in tiles (``tiles.py``): all
    of them, but in a log begun before the tiles, whose tiles are derived a part a round
    (its node rows serve the rest until then). A head without it (written before) has 0."""

    @classmethod
    def empty(cls, origin: str, key: str, queue_from: int) -> TreeState:
        return cls(0, EMPTY_ROOT, b"", origin, key, queue_from)

    def grown(self, frontier: Frontier) -> TreeState:
        return replace(self, size=frontier.size, root=frontier.root(), frontier=frontier.to_bytes())

    def frontier_of(self) -> Frontier:
        try:
            return Frontier.from_bytes(self.size, self.frontier)
        except ValueError as exc:
            raise IntegrityError(f"the ledger's head is damaged: {exc}") from None

    def encode(self) -> str:
        return json.dumps(
            {
                "v": 1,
                "size": self.size,
                "root": _b64(self.root),
                "frontier": _b64(self.frontier),
                "origin": self.origin,
                "key": self.key,
                "queue_from": self.queue_from,
                "checkpoint": self.checkpoint,
                "checkpoint_size": self.checkpoint_size,
                "checkpoint_at": self.checkpoint_at,
                "tiled": self.tiled,
            },
            sort_keys=True,
        )

    @classmethod
    def decode(cls, text: str) -> TreeState:
        try:
            fields = json.loads(text)
            state = cls(
                size=int(fields["size"]),
                root=base64.b64decode(fields["root"], validate=True),
                frontier=base64.b64decode(fields["frontier"], validate=True),
                origin=str(fields["origin"]),
                key=str(fields["key"]),
                queue_from=int(fields["queue_from"]),
                checkpoint=str(fields["checkpoint"]),
                checkpoint_size=int(fields["checkpoint_size"]),
                checkpoint_at=int(fields["checkpoint_at"]),
                tiled=int(fields.get("tiled", 0)),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise IntegrityError(f"the ledger's head is damaged: {exc}") from None
        state.frontier_of()
        if not 0 <= state.tiled <= state.size:
            raise IntegrityError(f"the ledger's head is damaged: tiles of {state.tiled} entries")
        return state


def read_tree(books: LedgerBooks) -> TreeState | None:
    """The ledger's head, or None before the ledger started."""
    text = books.head.text(TREE)
    return None if text is None else TreeState.decode(text)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
