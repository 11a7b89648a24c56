"""``tallies``: one report's counts added to another's, a failure counted and named; the
reports built on them answer the same JSON as before, to the order of its keys."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from imixs_archive.errors import ArchiveError, IntegrityError
from imixs_archive.recovery.backup_book import BackupSummary
from imixs_archive.recovery.export import ExportSummary
from imixs_archive.services.importer import ImportSummary
from imixs_archive.tallies import add_up


@dataclass
class Counted:
    name: str = ""
    flag: bool = False
    count: int = 0
    names: list[str] = field(default_factory=list)
    codes: set[int] = field(default_factory=set)


def test_add_up_adds_numbers_extends_lists_joins_sets_and_keeps_the_rest() -> None:
    into = Counted("a", False, 2, ["x"], {1})
    add_up(into, Counted("b", True, 3, ["y", "z"], {1, 3}))
    assert into == Counted("a", False, 5, ["x", "y", "z"], {1, 3})


def test_a_failure_is_counted_and_named_and_bad_bytes_counted_corrupt() -> None:
    summary = ExportSummary()
    summary.fail("s1", IntegrityError("digest differs"))
    summary.fail("s2", ArchiveError("gone"))
    assert (summary.failed, summary.corrupt) == (2, 1)
    assert summary.failures == ["s1: digest differs", "s2: gone"]


def test_an_import_failure_keeps_its_exit_code() -> None:
    summary = ImportSummary()
    summary.fail("a.xml", ArchiveError("bad"))
    summary.fail("b.xml", ValueError("worse"))
    assert summary.failures == ["a.xml: bad", "b.xml: worse"]
    assert (summary.failed, summary.exit_code) == (2, 1)


def test_merged_backup_summaries_add_their_counts_and_keep_where_they_resumed() -> None:
    into = BackupSummary(written=1, failed=1, failures=["a: x"], corrupt=1, resumed="after u")
    into.merge(BackupSummary(written=2, current=3, bytes_written=7, failed=1, failures=["b: y"]))
    assert into == BackupSummary(
        written=3, current=3, failed=2, bytes_written=7, failures=["a: x", "b: y"], corrupt=1,
        resumed="after u",
    )  # fmt: skip


def test_the_reports_answer_their_json_in_the_order_they_always_did() -> None:
    export = ExportSummary(copied=1, present=2, failed=3, bytes_copied=4, failures=["f"])
    export.corrupt, export.holds, export.sync_records = 5, 6, 7
    assert json.dumps(export.to_json()) == (
        '{"copied": 1, "present": 2, "failed": 3, "bytes_copied": 4, "failures": ["f"],'
        ' "corrupt": 5, "holds": 6, "sync_records": 7}'
    )
    backup = BackupSummary(1, 2, 3, 4, ["f"], 5)
    assert json.dumps(backup.to_json()) == (
        '{"written": 1, "current": 2, "failed": 3, "bytes_written": 4, "failures": ["f"],'
        ' "corrupt": 5, "resumed": null}'
    )
    imported = ImportSummary(1, 2, 3, 4, 5, ["f"], ["w"], {3})
    assert json.dumps(imported.to_json()) == (
        '{"new": 1, "present": 2, "failed": 3, "logical_bytes": 4, "new_bytes": 5,'
        ' "failures": ["f"], "warnings": ["w"], "exit_code": 3}'
    )


def test_the_day_measures_written_out_add_every_field_as_add_up_does() -> None:
    """``Measures.add`` sums its fields by hand (it is on the per-snapshot path): a field
    added to the class and forgotten there fails here."""
    from dataclasses import fields

    from imixs_archive.analytics.figures import Measures

    values = {f.name: 10 * (n + 1) for n, f in enumerate(fields(Measures))}
    by_hand, walked = Measures(**values), Measures(**values)
    other = Measures(**{name: value + 1 for name, value in values.items()})
    by_hand.add(other)
    add_up(walked, other)
    assert by_hand == walked
