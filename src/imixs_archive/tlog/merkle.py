"""RFC 6962 / RFC 9162 §2.1 Merkle trees over SHA-256: hashes, compact ranges and proofs.

The tree
    A log of n entries D[0:n] has the Merkle Tree Hash MTH of RFC 6962 §2.1:
    MTH({}) = SHA-256(""), MTH({d}) = SHA-256(0x00 || d), and for n > 1, with k the largest
    power of two smaller than n, MTH(D[0:n]) = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])).
    The prefix bytes keep a leaf from ever hashing like an interior node.

How nodes are addressed
    Every hash a proof is made of is the root of a *perfect* subtree: 2**level consecutive
    leaves starting at a multiple of 2**level. Node (level, index) covers the leaves
    [index * 2**level, (index + 1) * 2**level); (0, i) is leaf hash i and
    (level + 1, i) = node_hash((level, 2i), (level, 2i + 1)). Once the log has grown past
    its last leaf such a node never changes, so a store keeps each one exactly once; the
    hashes along a tree's ragged right edge are not nodes and are folded on demand.
    The tree of size n is, left to right, one perfect subtree per set bit of n, largest
    first (the ``Frontier``); its head folds them from the right.

Proof generation reads nodes through a ``NodeGetter`` (O(log n) calls per proof); the
verifiers follow RFC 9162 §2.1.3.2 and §2.1.4.2 and need no nodes at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence

HASH_SIZE = 32
EMPTY_ROOT: bytes = hashlib.sha256(b"").digest()
"""MTH of the empty tree: SHA-256 of the empty string."""

NodeGetter = Callable[[int, int], bytes]
"""node(level, index): the hash of the complete (perfect) subtree of 2**level leaves
starting at leaf index * 2**level; level 0 is a leaf hash. Only ever asked for subtrees
that are complete within the tree size in question."""


class ProofError(ValueError):
    """A proof does not verify: wrong shape, wrong sizes or a hash mismatch."""


def leaf_hash(entry: bytes) -> bytes:
    """The hash of a log entry: SHA-256(0x00 || entry)."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(width: int) -> int:
    """The largest power of two smaller than ``width`` (> 1): RFC 6962's k."""
    return 1 << ((width - 1).bit_length() - 1)


def _fold(hashes: Sequence[bytes]) -> bytes:
    """Fold subtree roots, largest (leftmost) first, into the root of their union."""
    result = hashes[-1]
    for left in reversed(hashes[:-1]):
        result = node_hash(left, result)
    return result


def root_of(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH over already-hashed leaves, by RFC 6962's recursion (EMPTY_ROOT for none)."""
    if not leaf_hashes:
        return EMPTY_ROOT
    if len(leaf_hashes) == 1:
        if len(leaf_hashes[0]) != HASH_SIZE:
            raise ValueError(f"a leaf hash has {HASH_SIZE} bytes, not {len(leaf_hashes[0])}")
        return leaf_hashes[0]
    k = _split(len(leaf_hashes))
    return node_hash(root_of(leaf_hashes[:k]), root_of(leaf_hashes[k:]))


class Frontier:
    """The compact range [0, size): the roots of the perfect subtrees that cover it, largest
    first (one per set bit of size). Appending a leaf merges equal-sized subtrees."""

    __slots__ = ("hashes", "size")

    size: int
    hashes: list[bytes]

    def __init__(self, size: int = 0, hashes: Sequence[bytes] = ()) -> None:
        if size < 0:
            raise ValueError(f"negative tree size {size}")
        if len(hashes) != size.bit_count():
            raise ValueError(f"size {size} takes {size.bit_count()} hashes, not {len(hashes)}")
        if any(len(h) != HASH_SIZE for h in hashes):
            raise ValueError(f"frontier hashes have {HASH_SIZE} bytes")
        self.size = size
        self.hashes = [bytes(h) for h in hashes]

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add a leaf hash; return the perfect subtrees this completes with level >= 1, as
        (level, index, hash) from the lowest up, so a caller can store every interior node."""
        if len(leaf) != HASH_SIZE:
            raise ValueError(f"a leaf hash has {HASH_SIZE} bytes, not {len(leaf)}")
        completed: list[tuple[int, int, bytes]] = []
        result, level, index = bytes(leaf), 0, self.size
        while index & 1:  # an equal-sized subtree waits on the left: merge the two
            result = node_hash(self.hashes.pop(), result)
            level, index = level + 1, index >> 1
            completed.append((level, index, result))
        self.hashes.append(result)
        self.size += 1
        return completed

    def root(self) -> bytes:
        """The tree head of [0, size)."""
        return _fold(self.hashes) if self.hashes else EMPTY_ROOT

    def to_bytes(self) -> bytes:
        """The hashes, concatenated (the size is kept elsewhere)."""
        return b"".join(self.hashes)

    @classmethod
    def from_bytes(cls, size: int, data: bytes) -> Frontier:
        """The inverse of ``to_bytes`` for a tree of ``size``; ValueError on a wrong length."""
        if size < 0 or len(data) != HASH_SIZE * size.bit_count():
            raise ValueError(f"{len(data)} bytes are no frontier of a tree of size {size}")
        return cls(size, [data[i : i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)])

    def copy(self) -> Frontier:
        """An independent copy."""
        return Frontier(self.size, self.hashes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frontier):
            return NotImplemented
        return self.size == other.size and self.hashes == other.hashes

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Frontier(size={self.size}, hashes=[{len(self.hashes)} hashes])"


def range_hash(start: int, end: int, node: NodeGetter) -> bytes:
    """MTH(D[start:end]) from as few ``node`` calls as possible.

    Requires 0 <= start <= end and, unless the range is empty, ``start`` a multiple of the
    largest power of two <= end - start. Every range RFC 6962's recursion splits a tree
    into satisfies this, [0, n) included. The range then is, left to right, one aligned
    perfect subtree per set bit of end - start, largest first: one ``node`` call each,
    folded from the right. An empty range is MTH({}) = EMPTY_ROOT.
    """
    width = end - start
    if start < 0 or width < 0:
        raise ValueError(f"no range [{start}, {end})")
    if width == 0:
        return EMPTY_ROOT
    if start % (1 << (width.bit_length() - 1)):
        raise ValueError(f"range [{start}, {end}) is not aligned to its largest subtree")
    pieces: list[bytes] = []
    position = start
    for level in reversed(range(width.bit_length())):
        if width >> level & 1:
            pieces.append(node(level, position >> level))
            position += 1 << level
    return _fold(pieces)


def inclusion_proof(index: int, size: int, node: NodeGetter) -> list[bytes]:
    """RFC 6962 PATH(index, D[size]): the audit path of leaf ``index``, leaf-side first."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of size {size}")
    path: list[bytes] = []
    start, end = 0, size  # the subtree holding the leaf, narrowed level by level
    while end - start > 1:
        middle = start + _split(end - start)
        if index < middle:
            path.append(range_hash(middle, end, node))
            end = middle
        else:
            path.append(range_hash(start, middle, node))
            start = middle
    path.reverse()
    return path


def consistency_proof(old_size: int, new_size: int, node: NodeGetter) -> list[bytes]:
    """RFC 6962 PROOF(old_size, D[new_size]); empty when old_size is 0 or new_size."""
    if not 0 <= old_size <= new_size:
        raise ValueError(f"no consistency proof from size {old_size} to {new_size}")
    if old_size in (0, new_size):
        return []
    proof: list[bytes] = []
    start, end = 0, new_size  # the subtree SUBPROOF recurses into; old_size in (start, end]
    whole = True  # SUBPROOF's b: the old tree is this subtree of the new one
    while old_size != end:
        middle = start + _split(end - start)
        if old_size <= middle:
            proof.append(range_hash(middle, end, node))
            end = middle
        else:
            proof.append(range_hash(start, middle, node))
            start, whole = middle, False
    if not whole:
        proof.append(range_hash(start, end, node))
    proof.reverse()
    return proof


def _check_hashes(proof: Sequence[bytes]) -> None:
    if any(len(h) != HASH_SIZE for h in proof):
        raise ProofError(f"proof hashes have {HASH_SIZE} bytes")


def _walk(fn: int, sn: int, path: Iterable[bytes], between: str) -> Iterator[tuple[bytes, bool]]:
    """The hashes of a proof's path, each with whether it is the left sibling, as the
    verification of RFC 9162 (§2.1.3.2, §2.1.4.2) walks from node ``fn`` of last node
    ``sn`` to the root; ProofError when the path is too long or too short (``between``
    names the proof in the message)."""
    for sibling in path:
        if sn == 0:
            raise ProofError(f"proof too long {between}")
        left = bool(fn & 1 or fn == sn)
        yield sibling, left
        if left:  # right-shift fn and sn equally until LSB(fn) is set or fn is 0
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(f"proof too short {between}")


def root_from_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """The tree head that ``proof`` makes of leaf hash ``leaf`` at ``index`` (RFC 9162
    §2.1.3.2); ProofError when index >= size or the proof has the wrong length."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of size {size}")
    if len(leaf) != HASH_SIZE:
        raise ProofError(f"a leaf hash has {HASH_SIZE} bytes, not {len(leaf)}")
    _check_hashes(proof)
    result = leaf
    for sibling, left in _walk(index, size - 1, proof, f"for leaf {index} of {size}"):
        result = node_hash(sibling, result) if left else node_hash(result, sibling)
    return result


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that leaf hash ``leaf`` is entry ``index`` of the tree of ``size`` with head
    ``root``; ProofError otherwise."""
    if root_from_inclusion(leaf, index, size, proof) != root:
        raise ProofError(f"inclusion proof of leaf {index} does not lead to the tree head")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Check that the tree of ``old_size`` with head ``old_root`` is a prefix of the tree of
    ``new_size`` with head ``new_root`` (RFC 9162 §2.1.4.2); ProofError otherwise.

    Sizes equal: the proof must be empty and the heads equal. Old size 0: trivially
    consistent, given an empty proof and the empty tree's head EMPTY_ROOT as old_root.
    """
    if not 0 <= old_size <= new_size:
        raise ProofError(f"a tree of size {old_size} is no prefix of one of size {new_size}")
    _check_hashes(proof)
    if old_size == 0 or old_size == new_size:
        if proof:
            raise ProofError(f"proof from size {old_size} to {new_size} must be empty")
        if old_size == 0 and old_root != EMPTY_ROOT:
            raise ProofError("the head of the empty tree is EMPTY_ROOT")
        if old_size == new_size and old_root != new_root:
            raise ProofError(f"two different heads for size {old_size}")
        return
    if not proof:
        raise ProofError(f"empty proof from size {old_size} to {new_size}")
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # the old tree is a node of the new: not sent
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    first = second = path[0]
    for sibling, left in _walk(fn, sn, path[1:], f"from size {old_size} to {new_size}"):
        if left:
            first, second = node_hash(sibling, first), node_hash(sibling, second)
        else:
            second = node_hash(second, sibling)
    if first != old_root:
        raise ProofError(f"consistency proof does not lead to the head of size {old_size}")
    if second != new_root:
        raise ProofError(f"consistency proof does not lead to the head of size {new_size}")
