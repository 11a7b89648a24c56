"""Nothing is stored changed without a word: characters XML cannot carry are refused,
naming the item; a snapshot pushed again with other content is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.json_codec import read_json, to_json
from imixs_archive.errors import DocumentError
from imixs_archive.services.importer import import_sources
from imixs_archive.services.sources import Source
from support.snapshots import make_snapshot


@pytest.mark.parametrize(
    ("items", "named"),
    [
        ({"subject": "a\u0000b\u000bc"}, "item 'subject'"),
        ({"tab\u0001name": "x"}, "item 'tab\\x01name'"),
        ({"nested": [["ok", "x\ud800"]]}, "item 'nested'"),
    ],
)
def test_characters_xml_cannot_carry_are_refused_naming_the_item(
    archive: Archive, items: dict[str, str], named: str
) -> None:
    doc = make_snapshot(0)
    for name, value in items.items():
        doc[name] = value if isinstance(value, list) else [value]
    with pytest.raises(DocumentError, match="XML cannot carry") as caught:
        archive.store(doc)
    assert named in str(caught.value)
    assert not archive.exists(doc["$uniqueid"][0])


def test_a_file_name_with_nul_is_refused(archive: Archive) -> None:
    doc = make_snapshot(0, files={"f\u0000.txt": b"content"})
    with pytest.raises(DocumentError, match="U\\+0000"):
        archive.store(doc)
    assert list(archive.index.iter_snapshot_ids()) == []


def test_json_with_a_control_character_fails_alone(archive: Archive, tmp_path: Path) -> None:
    good, bad = make_snapshot(0), make_snapshot(1, subject="a\u0000b")
    path = tmp_path / "two.json"
    path.write_bytes(to_json([good, bad]))
    assert len(read_json(path.read_bytes())) == 2
    summary = import_sources(archive, [Source(str(path), path, None)])
    assert (summary.new, summary.failed) == (1, 1)
    assert "XML cannot carry" in summary.failures[0] and "'subject'" in summary.failures[0]


def test_pushing_an_archived_snapshot_with_other_content_is_reported(archive: Archive) -> None:
    first = make_snapshot(0, subject="original")
    assert archive.store(first).warnings == []
    again = archive.store(make_snapshot(0, subject="original"))
    assert not again.new and again.warnings == []
    changed = archive.store(make_snapshot(0, subject="changed"))
    assert not changed.new
    assert changed.warnings == [
        "already archived with different content: the archived version is kept"
    ]
    assert archive.load(first["$uniqueid"][0])["subject"] == ["original"]
