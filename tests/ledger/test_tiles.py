"""The ledger's tree kept as C2SP tlog-tiles: the tiles are the tree's hashes as the spec
lays them out, one row per tile, proofs read from them; a log older than the tiles keeps
working and gets its tiles a part a round, on both stores."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import StoreError
from imixs_archive.ledger import tiles as tiles_module
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.keys import key_path, load_signer
from imixs_archive.ledger.proofs import check_inclusion, inclusion
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tiles import WIDTH, TileReader, extend_tiles, tile_reader
from imixs_archive.ledger.tree import TREE, TreeState, read_tree
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_LEDGER_TILES
from imixs_archive.tlog.merkle import (
    EMPTY_ROOT,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root_of,
    verify_consistency,
    verify_inclusion,
)
from support.snapshots import make_snapshot


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "keys")})


def _leaves(count: int) -> list[bytes]:
    return [leaf_hash(str(i).encode()) for i in range(count)]


def _expected_tile(leaves: list[bytes], level: int, idx: int) -> bytes:
    """What the spec says tile ``level``/``idx`` of these leaves holds: MTH of each
    ``256**level`` entries, as far as they are complete."""
    unit = WIDTH**level
    hashes = []
    for i in range(WIDTH):
        start = (idx * WIDTH + i) * unit
        if start + unit > len(leaves):
            break
        hashes.append(root_of(leaves[start : start + unit]))
    return b"".join(hashes)


def _head(size: int, tiled: int | None = None) -> TreeState:
    state = TreeState.empty("test/log", "", 0)
    return dataclasses.replace(state, size=size, tiled=size if tiled is None else tiled)


def _check_tiles(books: LedgerBooks, leaves: list[bytes]) -> None:
    """Each tile the tree of these leaves has is there in one row, as the spec lays it out."""
    size, level = len(leaves), 0
    while size >= WIDTH**level:
        count = size // WIDTH**level
        for idx in range((count + WIDTH - 1) // WIDTH):
            expected = _expected_tile(leaves, level, idx)
            assert books.tile(level, idx) == expected, (level, idx)
            assert books.tile_widths(level, idx) == [len(expected) // 32], (level, idx)
        level += 1


def test_tiles_grown_in_any_steps_are_the_tree_as_the_spec_lays_it_out(
    archive: Archive,
) -> None:
    """Past a full level-1 tile (65,536 entries): full tiles, partial ones at every level,
    each in one row (the narrower rows deleted); every node and proof read from them."""
    books = archive.ledger
    leaves = _leaves(WIDTH * WIDTH + 300)
    steps = random.Random(44)
    size = 0
    for stop in [1, 255, 256, 257, 700, 65_535, 65_536, 65_537, len(leaves)]:
        while size < stop:
            step = min(stop - size, steps.choice([1, 3, 200, 5000]))
            size = extend_tiles(books, size, leaves[size : size + step])
        assert books.tile(0, 0) == _expected_tile(leaves[:size], 0, 0)
        reader = TileReader(books, _head(size))
        root = root_of(leaves[:size])
        for index in {0, size // 2, size - 1}:
            path = inclusion_proof(index, size, reader.node)
            verify_inclusion(leaves[index], index, size, path, root)
        old = max(1, size // 3)
        proof = consistency_proof(old, size, reader.node)
        verify_consistency(old, size, root_of(leaves[:old]), root, proof)
    _check_tiles(books, leaves)
    assert books.tile(2, 0) == root_of(leaves[:65_536])  # level 2's partial tile: 1 hash
    assert TileReader(books, _head(size)).hashes(0, 0, 1) == leaves[0]
    assert TileReader(books, _head(10)).hashes(0, 0, 11) is None  # past the head


def test_a_proof_reads_a_few_tiles_not_a_row_per_node(archive: Archive) -> None:
    books = archive.ledger
    leaves = _leaves(3 * WIDTH * WIDTH + 77)
    extend_tiles(books, 0, leaves)
    reads: list[tuple[int, int]] = []
    original = books.tile

    def counted(level: int, idx: int) -> bytes | None:
        reads.append((level, idx))
        return original(level, idx)

    books.tile = counted  # type: ignore[method-assign]
    reader = TileReader(books, _head(len(leaves)))
    path = inclusion_proof(12_345, len(leaves), reader.node)
    verify_inclusion(leaves[12_345], 12_345, len(leaves), path, root_of(leaves))
    assert len(path) == 18
    assert len(reads) == len(set(reads)) <= 6  # about two tiles a level, each read once


def _make_old(archive: Archive, backend: Backend, leaves: list[bytes]) -> None:
    """Turn the ledger into one written before the tiles: a row per node, no tiles, a head
    without ``tiled``."""
    books = archive.ledger
    size = len(leaves)
    nodes = []
    level = 1
    while size >> level:
        for idx in range(size >> level):
            nodes.append((level, idx, root_of(leaves[idx << level : (idx + 1) << level])))
        level += 1
    books.put_nodes(nodes)
    for level in range(3):
        for idx in range(size // WIDTH ** (level + 1) + 1):
            backend.delete(ARCHIVE_LEDGER_TILES, {"level": level, "idx": idx})
    text = books.head.text(TREE)
    assert text is not None
    fields = json.loads(text)
    del fields["tiled"]
    old = json.dumps(fields)
    assert '"tiled"' not in old and TreeState.decode(old).tiled == 0
    assert books.head.turn(TREE, text, old)


def _stored_leaves(archive: Archive) -> list[bytes]:
    return [logged.leaf for logged in archive.ledger.entries(0)]


def _old_log(archive: Archive, backend: Backend, settings: Settings, count: int) -> Sequencer:
    """A log of ``count`` entries, signed, made as if written before the tiles."""
    for step in range(count):
        archive.store(make_snapshot(step))
    sequencer = Sequencer(archive, settings)
    sequencer.drain(checkpoint=True)
    _make_old(archive, backend, _stored_leaves(archive))
    return sequencer


def test_a_log_older_than_the_tiles_gets_them_a_part_a_round_and_proves_meanwhile(
    archive: Archive, backend: Backend, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    sequencer = _old_log(archive, backend, settings, 23)
    assert archive.ledger.tile(0, 0) is None
    sid = str(make_snapshot(20).get_first("$uniqueid"))
    monkeypatch.setattr(tiles_module, "CATCH_UP", 5)
    signer = load_signer(key_path(settings))
    assert signer is not None
    proof = inclusion(archive, sequencer, sid)  # from the node rows
    assert check_inclusion(proof, [signer.verifier()]).entry.target == sid
    assert read_tree(archive.ledger).tiled == 5  # type: ignore[union-attr]  # (its drain's round)
    seen = []
    for step in range(23, 30):
        archive.store(make_snapshot(step))
        sequencer.drain(checkpoint=True)
        head = read_tree(archive.ledger)
        assert head is not None
        seen.append(head.tiled)
        leaves = _stored_leaves(archive)
        reader = tile_reader(archive.ledger)
        for index in range(head.size):  # every proof holds, tiled or not
            path = inclusion_proof(index, head.size, reader.node)
            verify_inclusion(leaves[index], index, head.size, path, head.root)
    assert seen == [15, 25, 26, 27, 28, 29, 30]  # two rounds a drain; then caught up
    _check_tiles(archive.ledger, _stored_leaves(archive))
    sequencer.release()


def test_an_older_log_past_one_full_tile_proves_from_its_node_rows(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    """A log older than the tiles and longer than 256 entries, its tiles not derived yet:
    a proof of an entry past the first 256 needs the hash of those 256 (a level-8 node),
    read from the log's node rows; every such proof holds against the head."""
    sequencer = _old_log(archive, backend, settings, WIDTH + 4)
    leaves = _stored_leaves(archive)
    head = read_tree(archive.ledger)
    assert head is not None and head.tiled == 0 and head.size == WIDTH + 4
    reader = tile_reader(archive.ledger)
    for index in range(WIDTH, head.size):
        path = inclusion_proof(index, head.size, reader.node)
        verify_inclusion(leaves[index], index, head.size, path, head.root)
    sequencer.release()


def test_deriving_the_tiles_resumes_after_a_round_that_failed(
    archive: Archive, backend: Backend, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    sequencer = _old_log(archive, backend, settings, 12)
    monkeypatch.setattr(tiles_module, "CATCH_UP", 8)
    books = archive.ledger
    turn = books.head.turn

    def fails(name: str, expected: str, state: str) -> bool:
        if name == TREE:
            raise StoreError("the store went away")
        return turn(name, expected, state)

    monkeypatch.setattr(books.head, "turn", fails)
    with pytest.raises(StoreError):
        sequencer.run()  # wrote the first tiles, then died before the head moved
    monkeypatch.setattr(books.head, "turn", turn)
    head = read_tree(books)
    assert head is not None and head.tiled == 0
    sequencer.run()
    sequencer.run()
    head = read_tree(books)
    assert head is not None and head.tiled == head.size == 12
    _check_tiles(books, _stored_leaves(archive))
    sequencer.release()


def test_an_idle_ledger_still_derives_the_tiles_of_an_older_log(
    archive: Archive, backend: Backend, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing queued and the head signed: a round has nothing to log, yet it is not quiet
    (writing nothing) while an older log's tiles are still to derive: an idle ``serve``
    derives them, a part a round, then its rounds are quiet."""
    sequencer = _old_log(archive, backend, settings, 12)
    monkeypatch.setattr(tiles_module, "CATCH_UP", 5)
    seen = []
    for _round in range(4):
        sequencer.run()
        head = read_tree(archive.ledger)
        assert head is not None
        seen.append(head.tiled)
    assert seen == [5, 10, 12, 12]
    _check_tiles(archive.ledger, _stored_leaves(archive))
    sequencer.release()


def test_an_empty_tree_has_no_tiles(archive: Archive) -> None:
    reader = TileReader(archive.ledger, _head(0))
    assert reader.hashes(0, 0, 1) is None
    assert extend_tiles(archive.ledger, 0, []) == 0
    assert root_of([]) == EMPTY_ROOT == hashlib.sha256(b"").digest()
