"""Incremental base64: any split of the input gives the same bytes."""

from __future__ import annotations

import base64
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imixs_archive.document.base64_stream import ENCODE_BLOCK, Base64Decoder, iter_base64


def _decode_in_pieces(text: bytes, cuts: list[int]) -> bytes:
    out = bytearray()
    decoder = Base64Decoder(out.extend)
    start = 0
    for cut in sorted(set(cuts)):
        decoder.feed(text[start:cut])
        start = cut
    decoder.feed(text[start:].decode("ascii"))  # str pieces work too
    decoder.finish()
    assert decoder.decoded == len(out)
    return bytes(out)


@given(st.binary(max_size=300), st.lists(st.integers(0, 400), max_size=20))
def test_decoder_any_split(data: bytes, cuts: list[int]) -> None:
    text = base64.b64encode(data)
    assert _decode_in_pieces(text, [c for c in cuts if c <= len(text)]) == data


@given(st.binary(max_size=200), st.lists(st.integers(0, 300), max_size=10))
def test_decoder_whitespace_anywhere(data: bytes, cuts: list[int]) -> None:
    text = base64.encodebytes(data).replace(b"\n", b"\r\n \t")  # MIME lines, CRLF, blanks
    assert _decode_in_pieces(text, [c for c in cuts if c <= len(text)]) == data


def test_decoder_tolerates_missing_padding() -> None:
    assert _decode_in_pieces(b"QUJDRA", [3]) == b"ABCD"


@pytest.mark.parametrize("text", [b"QUJD!A==", b"QQ==QUJD", b"QUJDR", "QUJé"])
def test_decoder_refuses(text: bytes | str) -> None:
    decoder = Base64Decoder(lambda piece: None)
    with pytest.raises(ValueError):
        decoder.feed(text)
        decoder.finish()


def test_decoder_refuses_data_after_padding_across_pieces() -> None:
    decoder = Base64Decoder(lambda piece: None)
    decoder.feed(b"QQ==")
    with pytest.raises(ValueError, match="after the base64 padding"):
        decoder.feed(b"QUJD")


@given(st.lists(st.binary(max_size=70), max_size=12))
def test_encoder_any_pieces(pieces: list[bytes]) -> None:
    assert b"".join(iter_base64(pieces)) == base64.b64encode(b"".join(pieces))


def test_encoder_output_pieces_bounded() -> None:
    data = os.urandom(5 * ENCODE_BLOCK + 7)
    parts = list(iter_base64([data[:11], memoryview(data)[11:]]))
    assert b"".join(parts) == base64.b64encode(data)
    assert max(len(p) for p in parts) <= ENCODE_BLOCK * 4 // 3


def test_block_decoder_agrees_with_the_standard_library() -> None:
    """The SIMD decoder accepts what base64 accepts and refuses what it must."""
    data = os.urandom(100_000)
    assert _decode_in_pieces(base64.b64encode(data), [1, 5, 77, 4096]) == data
    for bad in (b"QUJD!A==", b"QQ==QUJD", b"QUJDR", b"Q===", b"QUJD====", b"QU=D"):
        decoder = Base64Decoder(lambda piece: None)
        with pytest.raises(ValueError):
            decoder.feed(bad)
            decoder.finish()
