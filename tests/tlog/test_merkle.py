"""RFC 6962 Merkle trees (``imixs_archive.tlog.merkle``): published vectors, properties, cost.

Known answers are the RFC 6962 test data of Certificate Transparency as kept by
github.com/transparency-dev/merkle (commit 417fb0c314750d94e53942e9f92e79b6d35915db):
leaves, node hashes, roots and compact ranges from ``testonly/constants.go``; inclusion
and consistency probes from ``testdata/inclusion/*`` and ``testdata/consistency/*``
(the JSON files ``proof/verify_test.go`` walks). The probes' failing variants are each
one named change of a happy path; ``inclusion_variants`` and ``consistency_variants``
make the same changes (names as in the files) rather than listing 150 near-copies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from imixs_archive.tlog.merkle import (
    EMPTY_ROOT,
    HASH_SIZE,
    Frontier,
    NodeGetter,
    ProofError,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    range_hash,
    root_from_inclusion,
    root_of,
    verify_consistency,
    verify_inclusion,
)

h = bytes.fromhex

# testonly/constants.go: LeafInputs()
LEAF_INPUTS = [
    h(""),
    h("00"),
    h("10"),
    h("2021"),
    h("3031"),
    h("40414243"),
    h("5051525354555657"),
    h("606162636465666768696a6b6c6d6e6f"),
]
# testonly/constants.go: NodeHashes(), [level][index] over the eight leaves.
NODE_HASHES = [
    [
        h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
        h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
        h("0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7"),
        h("07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7"),
        h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        h("4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658"),
        h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
        h("46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"),
    ],
    [
        h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
        h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
        h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
    ],
    [
        h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ],
    [h("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")],
]
# testonly/constants.go: EmptyRootHash() and RootHashes(), indexed by tree size 0..8.
EMPTY = h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
ROOTS = [
    EMPTY,
    h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
    h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
    h("aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77"),
    h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    h("4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4"),
    h("76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef"),
    h("ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c"),
    h("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"),
]
# testonly/constants.go: CompactTrees(), the frontier of each size as (level, index).
COMPACT = [
    [],
    [(0, 0)],
    [(1, 0)],
    [(1, 0), (0, 2)],
    [(2, 0)],
    [(2, 0), (0, 4)],
    [(2, 0), (1, 2)],
    [(2, 0), (1, 2), (0, 6)],
    [(3, 0)],
]

# testdata/inclusion/{0..4}/happy-path.json and single-entry/matching-root-and-leaf.json:
# (name, leafIdx, treeSize, leafHash, proof, root); every hash is one of the above.
N0, N1, N2 = NODE_HASHES[0], NODE_HASHES[1], NODE_HASHES[2]
SINGLE = h("0d3aed023148ffd2a259fbd0cdc7fb3cf975658760d3775b82af6f90aacc2dfc")
INCLUSION = [
    ("0", 0, 1, N0[0], [], ROOTS[1]),
    ("1", 0, 8, N0[0], [N0[1], N1[1], N2[1]], ROOTS[8]),
    ("2", 5, 8, N0[5], [N0[4], N1[3], N2[0]], ROOTS[8]),
    ("3", 2, 3, N0[2], [N1[0]], ROOTS[3]),
    ("4", 1, 5, N0[1], [N0[0], N1[1], N0[4]], ROOTS[5]),
    ("single-entry", 0, 1, SINGLE, [], SINGLE),
]
# testdata/consistency/{0..4}/happy-path.json: (name, size1, size2, proof); the roots
# are ROOTS[size1] and ROOTS[size2].
CONSISTENCY: list[tuple[str, int, int, list[bytes]]] = [
    ("0", 1, 1, []),
    ("1", 1, 8, [N0[1], N1[1], N2[1]]),
    ("2", 6, 8, [N1[2], N1[3], N2[0]]),
    ("3", 2, 5, [N1[1], N0[4]]),
    ("4", 6, 7, [N1[2], N0[6], N2[0]]),
]
RANDOM = h("abacaba000000000000000000000000000000000000000000060061e00123456")
DONT_CARE_1, DONT_CARE_2 = b"don't care 1", b"don't care 2"
# testdata/inclusion/additional/*/*.json and the failing single-entry/*.json: (leafIdx,
# treeSize, leafHash, root) with an empty proof, all rejected.
INCLUSION_REJECTED = [
    *(
        (index, size, leaf, root)
        for index, size in [(0, 0), (0, 1), (1, 0), (2, 1)]
        for leaf, root in [(RANDOM, EMPTY), (b"", EMPTY), (RANDOM, b"")]
    ),
    (0, 1, b"", SINGLE),
    (0, 1, b"", b""),
    (0, 1, SINGLE, b""),
]
# testdata/consistency/additional/*: (size1, size2, root1, root2, proof, wantErr).
CONSISTENCY_EDGES = [
    (0, 1, EMPTY, EMPTY, [EMPTY], True),
    (0, 0, EMPTY, DONT_CARE_2, [], True),
    (1, 1, EMPTY, DONT_CARE_2, [], True),
    (2, 1, DONT_CARE_1, DONT_CARE_2, [], True),
    (1, 0, DONT_CARE_1, DONT_CARE_2, [], True),
    (0, 1, DONT_CARE_1, DONT_CARE_2, [], True),
    # "size1 is zero and size2 is not zero" is an error there ("meaningless"); here, as in
    # RFC 9162's terms, the empty tree is a prefix of every tree: the one deliberate change.
    (0, 1, EMPTY, DONT_CARE_2, [], False),
    (1, 1, DONT_CARE_2, DONT_CARE_2, [], False),
    (1, 1, DONT_CARE_1, DONT_CARE_2, [], True),
    (0, 0, DONT_CARE_1, DONT_CARE_1, [], True),
    (0, 0, DONT_CARE_1, DONT_CARE_2, [], True),
    (1, 2, DONT_CARE_1, DONT_CARE_2, [], True),
    (1, 1, EMPTY, EMPTY, [EMPTY], True),
    (0, 0, EMPTY, EMPTY, [EMPTY], True),
]

U64 = 1 << 64  # the Go probes' sizes are uint64: "sub 1" of 0 wraps


def flip(value: bytes, bit: int) -> bytes:
    return bytes([value[0] ^ (1 << bit)]) + value[1:]


def short(value: object) -> str | None:
    """A readable test id for a hash: its first hex digits ("" for none)."""
    if isinstance(value, bytes):
        return value.hex()[:8] or '""'
    if isinstance(value, list):
        return f"{len(value)}hashes"
    return None


InclusionCase = tuple[int, int, bytes, list[bytes], bytes]
ConsistencyCase = tuple[int, int, bytes, bytes, list[bytes]]


def inclusion_variants(case: InclusionCase) -> Iterator[tuple[str, InclusionCase]]:
    """The failing probes ``testdata/inclusion/N/`` derives from a happy path."""
    index, size, leaf, proof, root = case
    yield "empty root", (index, size, leaf, proof, EMPTY)
    yield "random root", (index, size, leaf, proof, RANDOM)
    yield "wrong leaf", (index, size, b"WrongLeaf", proof, root)
    yield "leafIdx XOR @2", (index ^ 2, size, leaf, proof, root)
    yield "leafIdx plus @1", (index + 1, size, leaf, proof, root)
    yield "leafIdx sub @1", ((index - 1) % U64, size, leaf, proof, root)
    yield "treeSize div @2", (index, size // 2, leaf, proof, root)
    yield "treeSize mul @2", (index, size * 2, leaf, proof, root)
    yield "preceding garbage", (index, size, leaf, [b"", *proof], root)
    yield "trailing garbage", (index, size, leaf, [*proof, b""], root)
    yield "preceding root", (index, size, leaf, [root, *proof], root)
    yield "trailing root", (index, size, leaf, [*proof, root], root)
    for j in range(len(proof)):
        changed = [*proof[:j], flip(proof[j], 3), *proof[j + 1 :]]
        yield f"modified proof[{j}] bit @3", (index, size, leaf, changed, root)
    if proof:
        yield "removed component", (index, size, leaf, proof[:-1], root)
    if len(proof) > 1:
        yield "inserted component", (index, size, leaf, [proof[0], RANDOM, *proof[1:]], root)


def consistency_variants(case: ConsistencyCase) -> Iterator[tuple[str, ConsistencyCase]]:
    """The failing probes ``testdata/consistency/N/`` derives from a happy path."""
    size1, size2, root1, root2, proof = case
    yield "empty proof", (size1, size2, root1, root2, [])
    yield "wrong root1", (size1, size2, b"WrongRoot", root2, proof)
    yield "wrong root2", (size1, size2, root1, b"WrongRoot", proof)
    yield "swapped roots", (size1, size2, root2, root1, proof)
    yield "size1 XOR @2", (size1 ^ 2, size2, root1, root2, proof)
    yield "size1 plus @1", (size1 + 1, size2, root1, root2, proof)
    yield "size1 sub @1", ((size1 - 1) % U64, size2, root1, root2, proof)
    yield "size2 div @2", (size1, size2 // 2, root1, root2, proof)
    yield "size2 mul @2", (size1, size2 * 2, root1, root2, proof)
    yield "preceding garbage", (size1, size2, root1, root2, [b"", *proof])
    yield "trailing garbage", (size1, size2, root1, root2, [*proof, b""])
    yield "preceding root1", (size1, size2, root1, root2, [root1, *proof])
    yield "preceding root2", (size1, size2, root1, root2, [root2, *proof])
    yield "trailing root1", (size1, size2, root1, root2, [*proof, root1])
    yield "trailing root2", (size1, size2, root1, root2, [*proof, root2])
    yield "preceding proof @0", (size1, size2, root1, root2, [proof[0], *proof])
    yield "truncated proof", (size1, size2, root1, root2, proof[:-1])
    for j in range(len(proof)):
        changed = [*proof[:j], flip(proof[j], 4), *proof[j + 1 :]]
        yield f"modified proof@{j} bit @4", (size1, size2, root1, root2, changed)


def published_nodes(size: int) -> NodeGetter:
    """A node getter over NODE_HASHES for the tree of ``size`` leaves: KeyError for any
    subtree not complete within it."""
    table = {
        (level, index): value
        for level, row in enumerate(NODE_HASHES)
        for index, value in enumerate(row)
        if (index + 1) << level <= size
    }
    return lambda level, index: table[(level, index)]


def node_table(leaves: Sequence[bytes]) -> dict[tuple[int, int], bytes]:
    """Every perfect subtree of the tree of these leaf hashes, level by level (brute force)."""
    table: dict[tuple[int, int], bytes] = {}
    row, level = list(leaves), 0
    while row:
        table.update(((level, index), value) for index, value in enumerate(row))
        row = [node_hash(row[2 * i], row[2 * i + 1]) for i in range(len(row) // 2)]
        level += 1
    return table


def entries(count: int, salt: bytes = b"") -> list[bytes]:
    return [leaf_hash(salt + i.to_bytes(4, "big")) for i in range(count)]


# --- known answers ---------------------------------------------------------------------


def test_empty_root_and_sizes() -> None:
    assert EMPTY_ROOT == EMPTY == hashlib.sha256().digest()
    assert HASH_SIZE == 32
    assert root_of([]) == EMPTY
    assert Frontier().root() == EMPTY


def test_leaf_and_node_hashes_match_the_published_nodes() -> None:
    assert [leaf_hash(entry) for entry in LEAF_INPUTS] == NODE_HASHES[0]
    for level in range(1, len(NODE_HASHES)):
        below = NODE_HASHES[level - 1]
        want = [node_hash(below[2 * i], below[2 * i + 1]) for i in range(len(below) // 2)]
        assert want == NODE_HASHES[level]


@pytest.mark.parametrize("size", range(len(ROOTS)))
def test_roots_match_the_published_roots(size: int) -> None:
    leaves = [leaf_hash(entry) for entry in LEAF_INPUTS[:size]]
    assert root_of(leaves) == ROOTS[size]
    assert range_hash(0, size, published_nodes(size)) == ROOTS[size]
    frontier = Frontier()
    for leaf in leaves:
        frontier.append(leaf)
    assert frontier.root() == ROOTS[size]
    assert frontier.hashes == [NODE_HASHES[level][index] for level, index in COMPACT[size]]


@pytest.mark.parametrize(
    "name, index, size, leaf, proof, root", INCLUSION, ids=[case[0] for case in INCLUSION]
)
def test_published_inclusion_probes(
    name: str, index: int, size: int, leaf: bytes, proof: list[bytes], root: bytes
) -> None:
    verify_inclusion(leaf, index, size, proof, root)
    if name != "single-entry":  # its leaf is none of LEAF_INPUTS
        assert inclusion_proof(index, size, published_nodes(size)) == proof
    for change, (i, n, lf, pr, rt) in inclusion_variants((index, size, leaf, proof, root)):
        with pytest.raises(ProofError):
            verify_inclusion(lf, i, n, pr, rt)
            pytest.fail(f"{name}: {change} verified")


@pytest.mark.parametrize("index, size, leaf, root", INCLUSION_REJECTED, ids=short)
def test_published_inclusion_rejections(index: int, size: int, leaf: bytes, root: bytes) -> None:
    with pytest.raises(ProofError):
        verify_inclusion(leaf, index, size, [], root)


@pytest.mark.parametrize(
    "name, size1, size2, proof", CONSISTENCY, ids=[case[0] for case in CONSISTENCY]
)
def test_published_consistency_probes(
    name: str, size1: int, size2: int, proof: list[bytes]
) -> None:
    verify_consistency(size1, size2, ROOTS[size1], ROOTS[size2], proof)
    assert consistency_proof(size1, size2, published_nodes(size2)) == proof
    if size1 == size2:
        return  # the files have no variants of this one
    for change, args in consistency_variants((size1, size2, ROOTS[size1], ROOTS[size2], proof)):
        with pytest.raises(ProofError):
            verify_consistency(*args)
            pytest.fail(f"{name}: {change} verified")


@pytest.mark.parametrize("size1, size2, root1, root2, proof, fails", CONSISTENCY_EDGES, ids=short)
def test_published_consistency_edge_cases(
    size1: int, size2: int, root1: bytes, root2: bytes, proof: list[bytes], fails: bool
) -> None:
    if fails:
        with pytest.raises(ProofError):
            verify_consistency(size1, size2, root1, root2, proof)
    else:
        verify_consistency(size1, size2, root1, root2, proof)


# --- properties ----------------------------------------------------------------------

sizes = st.integers(min_value=1, max_value=300)
salts = st.binary(max_size=8)


@settings(max_examples=40, deadline=None)
@given(size=sizes, salt=salts)
def test_every_inclusion_proof_verifies(size: int, salt: bytes) -> None:
    leaves = entries(size, salt)
    table, root = node_table(leaves), root_of(leaves)
    for index, leaf in enumerate(leaves):
        proof = inclusion_proof(index, size, lambda level, i: table[(level, i)])
        verify_inclusion(leaf, index, size, proof, root)


@settings(max_examples=40, deadline=None)
@given(size=sizes, salt=salts)
def test_every_consistency_proof_verifies(size: int, salt: bytes) -> None:
    leaves = entries(size, salt)
    table, root = node_table(leaves), root_of(leaves)
    for old in range(size + 1):
        proof = consistency_proof(old, size, lambda level, i: table[(level, i)])
        verify_consistency(old, size, root_of(leaves[:old]), root, proof)


def flip_a_bit(data: st.DataObject, proof: list[bytes]) -> None:
    """One bit of one element of the proof, drawn, flipped."""
    j = data.draw(st.integers(0, len(proof) - 1), label="element")
    bit = data.draw(st.integers(0, 8 * HASH_SIZE - 1), label="bit")
    element = bytearray(proof[j])
    element[bit // 8] ^= 1 << (bit % 8)
    proof[j] = bytes(element)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), size=st.integers(min_value=2, max_value=300))
def test_a_changed_inclusion_proof_fails(data: st.DataObject, size: int) -> None:
    leaves = entries(size)
    table = node_table(leaves)
    index = data.draw(st.integers(0, size - 1), label="index")
    proof = inclusion_proof(index, size, lambda level, i: table[(level, i)])
    leaf, root = leaves[index], root_of(leaves)
    verify_inclusion(leaf, index, size, proof, root)
    kind = data.draw(st.sampled_from(["bit", "index", "size", "shorter", "longer"]))
    claimed_size = size
    if kind == "bit":
        flip_a_bit(data, proof)
    elif kind == "index":
        index = data.draw(st.integers(0, size - 1).filter(lambda i: i != index), label="to")
    elif kind == "size":
        # The head is signed with its size, so a claimed size comes with its own head.
        claimed_size = data.draw(st.integers(index + 1, 2 * size).filter(lambda n: n != size))
        root = root_of(entries(claimed_size))
    elif kind == "shorter":
        proof = proof[: data.draw(st.integers(0, len(proof) - 1), label="keep")]
    else:
        at = data.draw(st.integers(0, len(proof)), label="at")
        proof.insert(at, data.draw(st.sampled_from([root, leaf, *proof, RANDOM])))
    with pytest.raises(ProofError):
        verify_inclusion(leaf, index, claimed_size, proof, root)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), size=st.integers(min_value=2, max_value=300))
def test_a_changed_consistency_proof_fails(data: st.DataObject, size: int) -> None:
    leaves = entries(size)
    table = node_table(leaves)
    old = data.draw(st.integers(1, size - 1), label="old")  # a proof that is not empty
    proof = consistency_proof(old, size, lambda level, i: table[(level, i)])
    new = size
    verify_consistency(old, new, root_of(leaves[:old]), root_of(leaves), proof)
    kind = data.draw(st.sampled_from(["bit", "old", "new", "shorter", "longer"]))
    if kind == "bit":
        flip_a_bit(data, proof)
    elif kind == "old":
        old = data.draw(st.integers(0, size).filter(lambda m: m != old), label="to")
    elif kind == "new":
        new = data.draw(st.integers(old, 2 * size).filter(lambda n: n != size), label="to")
    elif kind == "shorter":
        proof = proof[: data.draw(st.integers(0, len(proof) - 1), label="keep")]
    else:
        at = data.draw(st.integers(0, len(proof)), label="at")
        proof.insert(at, data.draw(st.sampled_from([*proof, root_of(leaves), RANDOM])))
    longer = entries(max(new, size))  # the same log: a claimed size comes with its own head
    with pytest.raises(ProofError):
        verify_consistency(old, new, root_of(longer[:old]), root_of(longer[:new]), proof)


@settings(max_examples=40, deadline=None)
@given(size=st.integers(min_value=0, max_value=300), salt=salts)
def test_frontier_grows_the_tree_and_yields_each_subtree_once(size: int, salt: bytes) -> None:
    leaves = entries(size, salt)
    frontier, completed = Frontier(), list[tuple[int, int, bytes]]()
    for leaf in leaves:
        completed.extend(frontier.append(leaf))
    everything = node_table(leaves)
    interior = {key: value for key, value in everything.items() if key[0] >= 1}
    assert len(completed) == len(interior)
    assert {(level, index): value for level, index, value in completed} == interior
    for (level, index), value in interior.items():  # brute force, not the table's pairing
        assert value == root_of(leaves[index << level : (index + 1) << level])
    assert frontier.size == size
    assert frontier.root() == root_of(leaves)
    want, start = list[bytes](), 0
    for level in reversed(range(size.bit_length())):
        if size >> level & 1:
            want.append(everything[(level, start >> level)])
            start += 1 << level
    assert frontier.hashes == want
    again = Frontier.from_bytes(size, frontier.to_bytes())
    assert again == frontier
    assert len(frontier.to_bytes()) == HASH_SIZE * size.bit_count()


@settings(max_examples=100, deadline=None)
@given(data=st.data(), size=st.integers(min_value=1, max_value=300))
def test_range_hash_is_the_mth_of_the_range(data: st.DataObject, size: int) -> None:
    leaves = entries(size)
    table = node_table(leaves)
    width = data.draw(st.integers(1, size), label="width")
    step = 1 << (width.bit_length() - 1)
    start = step * data.draw(st.integers(0, (size - width) // step), label="slot")
    calls: list[tuple[int, int]] = []

    def node(level: int, index: int) -> bytes:
        calls.append((level, index))
        return table[(level, index)]

    assert range_hash(start, start + width, node) == root_of(leaves[start : start + width])
    assert len(calls) == width.bit_count()


# --- edges and errors ----------------------------------------------------------------


def test_range_hash_alignment_and_bounds() -> None:
    node = published_nodes(8)
    assert range_hash(3, 3, node) == EMPTY
    assert range_hash(2, 5, node) == node_hash(NODE_HASHES[1][1], NODE_HASHES[0][4])
    assert range_hash(4, 7, node) == node_hash(NODE_HASHES[1][2], NODE_HASHES[0][6])
    for start, end in [(1, 3), (3, 5), (2, 6), (4, 3), (-1, 0), (6, 10)]:
        with pytest.raises(ValueError, match="range"):
            range_hash(start, end, node)


def test_proof_generation_rejects_impossible_requests() -> None:
    node = published_nodes(8)
    for index, size in [(0, 0), (8, 8), (-1, 8)]:
        with pytest.raises(ValueError):
            inclusion_proof(index, size, node)
    for old, new in [(5, 4), (-1, 3)]:
        with pytest.raises(ValueError):
            consistency_proof(old, new, node)
    assert consistency_proof(0, 8, node) == []
    assert consistency_proof(8, 8, node) == []


def test_root_from_inclusion_returns_the_head_or_rejects_the_shape() -> None:
    leaf, proof = NODE_HASHES[0][5], [NODE_HASHES[0][4], NODE_HASHES[1][3], NODE_HASHES[2][0]]
    assert root_from_inclusion(leaf, 5, 8, proof) == ROOTS[8]
    assert root_from_inclusion(leaf, 5, 6, proof[:1] + proof[2:]) == ROOTS[6]
    for index, size, path in [(5, 5, proof), (5, 8, proof[:2]), (5, 8, [*proof, EMPTY])]:
        with pytest.raises(ProofError):
            root_from_inclusion(leaf, index, size, path)
    with pytest.raises(ProofError, match="bytes"):
        root_from_inclusion(leaf[:31], 5, 8, proof)
    with pytest.raises(ProofError, match="bytes"):  # refused before any hashing
        root_from_inclusion(leaf, 5, 8, [*proof[:2], proof[2] + b"x"])


def test_consistency_refuses_proof_hashes_of_another_length() -> None:
    proof = [N1[1], N0[4]]
    verify_consistency(2, 5, ROOTS[2], ROOTS[5], proof)
    with pytest.raises(ProofError, match="bytes"):
        verify_consistency(2, 5, ROOTS[2], ROOTS[5], [proof[0][:31], proof[1]])


def test_frontier_validates_and_copies() -> None:
    with pytest.raises(ValueError):
        Frontier(3, [ROOTS[2]])
    with pytest.raises(ValueError):
        Frontier(-1)
    with pytest.raises(ValueError):
        Frontier(1, [b"short"])
    with pytest.raises(ValueError):
        Frontier(1).append(b"short")
    for size, data in [(3, ROOTS[2]), (0, ROOTS[1]), (1, ROOTS[1] + b"x"), (-1, b"")]:
        with pytest.raises(ValueError):
            Frontier.from_bytes(size, data)
    frontier = Frontier(2, [ROOTS[2]])
    copy = frontier.copy()
    assert copy.append(NODE_HASHES[0][2]) == []
    assert copy.append(NODE_HASHES[0][3]) == [
        (1, 1, NODE_HASHES[1][1]),
        (2, 0, NODE_HASHES[2][0]),
    ]
    assert (frontier.size, frontier.hashes) == (2, [ROOTS[2]])
    assert copy.root() == ROOTS[4]
    assert copy != frontier


# --- cost ----------------------------------------------------------------------------

BIG = 1_000_003


def synthetic_nodes(size: int, calls: list[tuple[int, int]]) -> NodeGetter:
    """Stand-in hashes for a tree too big to build; fails on a subtree not complete in it."""

    def node(level: int, index: int) -> bytes:
        assert level >= 0 and index >= 0 and (index + 1) << level <= size, (level, index)
        calls.append((level, index))
        return hashlib.sha256(b"%d/%d" % (level, index)).digest()

    return node


def count_calls(make: Callable[[NodeGetter], list[bytes]], size: int) -> int:
    calls: list[tuple[int, int]] = []
    make(synthetic_nodes(size, calls))
    return len(calls)


@pytest.mark.parametrize("index", [0, 1, 2**19 - 1, 2**19, BIG // 2, BIG - 2, BIG - 1])
def test_inclusion_proof_costs_logarithmic_node_reads(index: int) -> None:
    calls = count_calls(lambda node: inclusion_proof(index, BIG, node), BIG)
    assert 1 <= calls <= 2 * BIG.bit_length()


@pytest.mark.parametrize(
    "old, new", [(1, BIG), (2**19, BIG), (2**19 + 1, BIG), (BIG - 1, BIG), (999_999, BIG)]
)
def test_consistency_proof_costs_logarithmic_node_reads(old: int, new: int) -> None:
    calls = count_calls(lambda node: consistency_proof(old, new, node), new)
    assert 1 <= calls <= 2 * new.bit_length()


def test_tree_head_of_a_big_tree_reads_one_node_per_set_bit() -> None:
    calls: list[tuple[int, int]] = []
    range_hash(0, BIG, synthetic_nodes(BIG, calls))
    assert len(calls) == BIG.bit_count()
