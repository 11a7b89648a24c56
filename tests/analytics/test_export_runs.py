"""The table export to a file over a large archive (``analytics/export_runs.py``): parts
(``--part K/N``) hold every row once, a run stopped by Ctrl-C or killed goes on where it
stood and ends with exactly the file an export in one go writes. On both backends."""

from __future__ import annotations

import datetime as dt
import io
import os
import signal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from imixs_archive.analytics.columns import parse_items
from imixs_archive.analytics.export_runs import export_to_file, part_path
from imixs_archive.analytics.export_table import ExportSpec, export_table
from imixs_archive.archive import part_runs
from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.document.model import Long
from imixs_archive.errors import BusyError
from support.kills import (
    process_env,
    refused_in_one_line,
    run_command,
    run_killed,
    stops_at,
)
from support.snapshots import fill_instances, make_snapshot

pytestmark = pytest.mark.both_stores  # store-facing: an export stopped, killed and resumed

INSTANCES = 20
ITEMS = "subject,$taskid,amount"


def fill(archive: Archive) -> int:
    """INSTANCES instances of 1 to 3 snapshots: the rows of an export of every snapshot."""
    return fill_instances(archive, INSTANCES, lambda k, step: {"amount": Long(k * 10 + step)})


def spec(format: str = "parquet", **options: object) -> ExportSpec:
    return ExportSpec(parse_items(ITEMS), format=format, batch_rows=2, workers=2, **options)  # type: ignore[arg-type]


def in_one_go(archive: Archive, wanted: ExportSpec) -> bytes:
    """What the export streamed in one go writes (the web API's export)."""
    out = io.BytesIO()
    export_table(archive, wanted, out)
    return out.getvalue()


def rows_of(data: bytes | Path) -> list[dict[str, object]]:
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    return pq.read_table(source).to_pylist()


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    """Where the exports go (the SQLite store is in ``tmp_path``)."""
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def books_left(archive: Archive) -> list[str]:
    return [n for n in CheckBooks(archive.backend).names("export-table") if "-lease/" not in n]


def test_parts_hold_every_row_once(archive: Archive, out_dir: Path) -> None:
    total = fill(archive)
    whole = rows_of(in_one_go(archive, spec()))
    assert len(whole) == total
    out = out_dir / "table.parquet"
    summaries = [export_to_file(archive, spec(), out, part=k, parts=3) for k in (2, 1, 3)]
    files = [part_path(out, k, 3) for k in (1, 2, 3)]
    assert [f.name for f in files] == [f"table.part-{k}-of-3.parquet" for k in (1, 2, 3)]
    parts = [rows_of(f) for f in files]
    assert all(0 < len(p) < total for p in parts)  # each a share
    assert sum(s.rows for s in summaries) == total
    snapshots = [row["snapshot"] for p in parts for row in p]
    assert len(snapshots) == len(set(snapshots)) == total
    key = lambda row: str(row["snapshot"])  # noqa: E731
    assert sorted((r for p in parts for r in p), key=key) == sorted(whole, key=key)
    schemas = {str(pq.read_schema(f)) for f in files}
    assert len(schemas) == 1  # the parts agree on the columns' types
    assert books_left(archive) == []  # the plan, the columns and the books gone
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(f.name for f in files)


def test_newest_in_parts(archive: Archive, out_dir: Path) -> None:
    fill(archive)
    newest = spec("csv", newest_only=True)
    whole = in_one_go(archive, newest).decode().splitlines()
    assert len(whole) == 1 + INSTANCES
    out = out_dir / "newest.csv"
    for k in (1, 2):
        export_to_file(archive, newest, out, part=k, parts=2)
    lines = [part_path(out, k, 2).read_text().splitlines() for k in (1, 2)]
    assert lines[0][0] == lines[1][0] == whole[0]  # each its header
    assert sorted(lines[0][1:] + lines[1][1:]) == sorted(whole[1:])


@pytest.mark.parametrize("format", ["parquet", "csv"])
def test_a_stopped_export_goes_on_and_ends_with_the_whole_file(
    archive: Archive, out_dir: Path, monkeypatch: pytest.MonkeyPatch, format: str
) -> None:
    """Ctrl-C after some instances: the same export goes on after them and its file is the
    one an export in one go writes, byte for byte (CSV) or row group for row group."""
    fill(archive)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    wanted = spec(format)
    out = out_dir / f"table.{format}"
    interrupt = stops_at(7, 13)
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            export_to_file(archive, wanted, out, seen=interrupt)
        assert not out.exists() and books_left(archive) != []
    done = export_to_file(archive, wanted, out, seen=interrupt)
    assert done.resumed == "after 13 instances"
    whole = in_one_go(archive, wanted)
    if format == "csv":
        assert out.read_bytes() == whole
    else:
        assert pq.read_table(out).equals(pq.read_table(io.BytesIO(whole)))
        groups = pq.ParquetFile(io.BytesIO(whole)).metadata.num_row_groups
        assert pq.ParquetFile(out).metadata.num_row_groups == groups
    assert done.rows == len(rows_of(out) if format == "parquet" else whole.splitlines()[1:])
    assert books_left(archive) == [] and sorted(p.name for p in out_dir.iterdir()) == [out.name]


def test_ctrl_c_ends_the_export_after_the_instance_at_hand(
    archive: Archive, out_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGINT lands anywhere (in a read, between a batch written and counted): the
    export notes it and stops after the instance at hand, its rows saved with its place."""
    fill(archive)
    monkeypatch.setattr(part_runs, "SAVE_MS", 10_000_000)  # saved only when stopping
    out = out_dir / "table.csv"
    met = 0

    def ctrl_c() -> None:
        nonlocal met
        met += 1
        if met == 5:
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)  # (ignored when pytest was started in the
    # background of a shell without job control: the export handles it all the same)
    with pytest.raises(KeyboardInterrupt):
        export_to_file(archive, spec("csv"), out, seen=ctrl_c)
    assert signal.getsignal(signal.SIGINT) is before  # given back
    done = export_to_file(archive, spec("csv"), out)
    assert done.resumed == "after 5 instances"
    assert out.read_bytes() == in_one_go(archive, spec("csv"))


def test_pieces_lost_or_another_export_begin_again(
    archive: Archive, out_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A book whose pieces are not on this machine (run elsewhere, removed) begins again;
    so does an export asked something else, or ``restart``."""
    fill(archive)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    out = out_dir / "table.parquet"
    stop = stops_at()
    with pytest.raises(KeyboardInterrupt):
        export_to_file(archive, spec(), out, seen=stop)
    for piece in (out_dir / ".table.parquet.export").iterdir():
        piece.unlink()
    again = export_to_file(archive, spec(), out)
    assert again.resumed == "" and rows_of(out) == rows_of(in_one_go(archive, spec()))
    with pytest.raises(KeyboardInterrupt):
        export_to_file(archive, spec(), out, seen=stop)
    other = spec(newest_only=True)
    assert export_to_file(archive, other, out).resumed == ""
    assert export_to_file(archive, spec(), out, restart=True).resumed == ""


def test_one_process_per_part(archive: Archive, out_dir: Path) -> None:
    fill(archive)
    out = out_dir / "t.csv"
    name = f"export-table.{_job_digest(spec('csv'))}"
    assert CheckBooks(archive.backend).take_lease(f"{name}-lease/1/1", "x@y:1:z", 60_000) == ""
    with pytest.raises(BusyError, match="another process"):
        export_to_file(archive, spec("csv"), out)
    assert export_to_file(archive, spec("csv"), out, part=1, parts=2).rows > 0


def _job_digest(wanted: ExportSpec) -> str:
    import hashlib

    from imixs_archive.analytics.export_runs import spec_key

    return hashlib.sha256(spec_key(wanted).encode()).hexdigest()[:16]


KILLED = """
from pathlib import Path
from imixs_archive.analytics.columns import parse_items
from imixs_archive.analytics.export_runs import export_to_file
from imixs_archive.analytics.export_table import ExportSpec
spec = ExportSpec(parse_items("subject,$taskid,amount"), batch_rows=2, workers=2)
with open_archive(load_settings(dict(os.environ))) as archive:
    export_to_file(archive, spec, Path(sys.argv[1]), seen=step)
"""


def test_a_killed_export_goes_on_where_it_stood(
    archive: Archive, store_settings: Settings, out_dir: Path
) -> None:
    """A kill (pieces written after the last save are left behind): the command goes on
    after the last saved instance and its file holds every row once."""
    fill(archive)
    out = out_dir / "table.parquet"
    env = process_env(store_settings)
    run_killed(KILLED, str(out), env=env, at=11)
    assert not out.exists()
    resumed = run_command(
        *("export-table", str(out), "--items", ITEMS, "--batch-rows", "2", "--workers", "2"),
        env=env,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "(went on after 10 instances)" in resumed.stdout
    whole = in_one_go(archive, spec())
    assert pq.read_table(out).equals(pq.read_table(io.BytesIO(whole)))
    assert books_left(archive) == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--part", "3/2"], "--part: expected K/N with 1 <= K <= N"),
        (["--part", "x"], "--part: expected K/N (part K of N"),
        (["--part", "1/2", "--from", "2024-01-01", "--to", "2024-01-02"], "--part splits"),
        (["--part", "1/2", "--items", "subject", "--output-folder-missing"], "cannot write"),
    ],
)
def test_bad_parts_are_one_line(
    archive: Archive,
    store_settings: Settings,
    out_dir: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
) -> None:
    archive.store(make_snapshot(0))
    missing = "--output-folder-missing" in arguments
    out = out_dir / "missing" / "t.csv" if missing else out_dir / "t.csv"
    arguments = [a for a in arguments if a != "--output-folder-missing"]
    args = ["export-table", str(out), "--items", "subject", *arguments]
    assert message in refused_in_one_line(store_settings, capsys, *args)


def test_the_day_range_walk_is_written_in_one_go(archive: Archive, out_dir: Path) -> None:
    fill(archive)
    day = dt.date(2000, 1, 1)
    ranged = spec("csv", first=day, last=dt.date(2100, 1, 1))
    out = out_dir / "range.csv"
    summary = export_to_file(archive, ranged, out)
    assert out.read_bytes() == in_one_go(archive, ranged) and summary.resumed == ""
    assert sorted(p.name for p in out_dir.iterdir()) == ["range.csv"]
