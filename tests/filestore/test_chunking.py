import hashlib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from imixs_archive.filestore.chunking import DEFAULT_PARAMS, StreamChunker, chunk_bytes


def _data(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


def test_known_answer_boundaries() -> None:
    """Pins the chunker and its parameters: a change here changes how archives dedupe."""
    chunks = chunk_bytes(_data(3_000_000))
    assert [len(chunk) for chunk in chunks] == KNOWN_SIZES
    assert b"".join(chunks) == _data(3_000_000)


# Sizes of the pieces of random.Random(7).randbytes(3_000_000) with DEFAULT_PARAMS.
KNOWN_SIZES = [
    178375,
    174538,
    167872,
    189813,
    137620,
    79576,
    176142,
    318137,
    119095,
    170312,
    110257,
    60467,
    152318,
    232351,
    181377,
    155633,
    184241,
    161259,
    50617,
]


def test_pieces_stay_within_bounds() -> None:
    sizes = [len(chunk) for chunk in chunk_bytes(_data(8_000_000, seed=3))]
    assert max(sizes) <= DEFAULT_PARAMS.max_size
    assert min(sizes[:-1]) >= DEFAULT_PARAMS.min_size
    assert sum(sizes) / len(sizes) <= 256 * 1024


def test_repetitive_content_is_cut_at_max_size() -> None:
    sizes = [len(chunk) for chunk in chunk_bytes(b"\0" * 5_000_000)]
    assert sizes[:4] == [DEFAULT_PARAMS.max_size] * 4


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=700_000), min_size=1, max_size=20))
def test_streaming_equals_whole_content(splits: list[int]) -> None:
    data = _data(sum(splits), seed=len(splits))
    chunker = StreamChunker()
    streamed: list[bytes] = []
    offset = 0
    for size in splits:
        streamed += chunker.feed(data[offset : offset + size])
        offset += size
    streamed += chunker.finish()
    assert streamed == chunk_bytes(data)
    assert b"".join(streamed) == data


def test_streaming_buffer_stays_bounded() -> None:
    """The chunker holds at most its window plus one unfinished chunk, whatever the size."""
    chunker = StreamChunker(window=256 * 1024)
    data = _data(6_000_000, seed=5)
    pieces: list[bytes] = []
    for start in range(0, len(data), 70_001):
        pieces += chunker.feed(memoryview(data)[start : start + 70_001])
        assert len(chunker._buffer) <= 256 * 1024 + DEFAULT_PARAMS.max_size
    pieces += chunker.finish()
    assert pieces == chunk_bytes(data)


def test_small_edit_changes_few_pieces() -> None:
    original = _data(10_000_000, seed=11)
    edited = bytearray(original)
    edited[5_000_000:5_000_010] = b"0123456789"
    before = {hashlib.sha256(c).digest() for c in chunk_bytes(original)}
    changed = [c for c in chunk_bytes(bytes(edited)) if hashlib.sha256(c).digest() not in before]
    assert sum(len(c) for c in changed) < 0.05 * len(original)


def test_empty_content_has_no_pieces() -> None:
    assert chunk_bytes(b"") == []
