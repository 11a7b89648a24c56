"""The characters XML 1.0 cannot carry (``document/xml_safe.py``)."""

from __future__ import annotations

from imixs_archive.document.xml_safe import NOT_XML


def test_not_xml_is_exactly_the_characters_outside_xml_chars() -> None:
    """XML 1.0 ``Char``: tab, newline, carriage return, U+0020-U+D7FF, U+E000-U+FFFD and
    U+10000-U+10FFFF. Checked around every edge of those ranges."""
    allowed = [(0x9, 0x9), (0xA, 0xA), (0xD, 0xD), (0x20, 0xD7FF), (0xE000, 0xFFFD)]
    allowed.append((0x10000, 0x10FFFF))
    edges = {point + step for low, high in allowed for point in (low, high) for step in (-1, 0, 1)}
    for point in sorted(p for p in edges if 0 <= p <= 0x10FFFF):
        is_char = any(low <= point <= high for low, high in allowed)
        assert (NOT_XML.search(chr(point)) is None) == is_char, hex(point)
