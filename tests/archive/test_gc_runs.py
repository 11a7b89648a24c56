"""A ``gc`` that stops and goes on, and one split into parts (``gc_runs.py``), on every
backend: the parts together list and remove what whole collections do, nothing twice and
nothing missed; a run stopped by Ctrl-C or killed goes on where it stood. Real time (a
short grace period and sleeps), so Cassandra's write times are the ones the collector
reasons about."""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive import part_runs
from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.gc_runs import GcRun, gc_part
from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import Settings
from imixs_archive.errors import BusyError
from imixs_archive.filestore.gc import GcReport
from imixs_archive.filestore.reading import EMPTY_MD5
from imixs_archive.storage.base import Backend
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_GARBAGE,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS_BY_DOCUMENT,
    Table,
)
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.java_rows import java_delete_snapshot, java_store_file
from support.kills import process_env, run_killed, run_script, stops_at
from support.snapshots import make_snapshot

GRACE = 0.4
HOLDER = f"test@{socket.gethostname()}:{os.getpid()}:gc"
COUNTED = (
    "removed_files",
    "removed_pieces",
    "bytes_freed",
    "listed_files",
    "listed_pieces",
    "listed_bytes",
    "java_pieces_listed",
    "java_pieces_removed",
    "java_bytes_freed",
    "dangling_refs_listed",
    "dangling_refs_removed",
    "empty_refs_removed",
    "kept",
)
"""What a report counts of the items themselves (``waiting`` and ``..._found`` count
the times an item was met, which depends on when a part runs)."""


def fill(backend: Backend) -> None:
    """Garbage of every kind: files of deleted snapshots (this archive's delete and the
    Java service's, which leaves a reference of a gone snapshot), unused Java files,
    pieces the Java service cut that no file lists, loose pieces of aborted writes and the
    empty file's references of older versions; beside files still in use."""
    rng = random.Random(17)
    with Archive(backend) as archive:
        for k in range(12):
            files = {f"own{k}.bin": rng.randbytes(30_000)}
            if k % 4 == 3:
                files["second.bin"] = rng.randbytes(10_000)
            origin = f"0abcdef0-0000-4000-8000-{k:012d}"
            snapshot_id = archive.store(make_snapshot(k, origin=origin, files=files)).snapshot_id
            if k % 4 == 1:
                archive.delete(snapshot_id)
            elif k % 4 == 3:
                java_delete_snapshot(backend, archive, snapshot_id)
        for _ in range(3):
            java_store_file(backend, rng.randbytes(5_000))
        for _ in range(4):
            data_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": rng.randbytes(3_000)}])
        for _ in range(2):
            loose = rng.randbytes(2_000)
            data_id = hashlib.sha256(loose).hexdigest()
            backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": loose}])
        kept = archive.store(make_snapshot(20, files={"empty.txt": b""})).snapshot_id
        backend.put(SNAPSHOTS_BY_DOCUMENT, [{"md5": EMPTY_MD5, "snapshot": kept}])


def run(backend: Backend, part: int = 1, parts: int = 1, **options: Any) -> GcRun:
    return gc_part(
        backend, holder=HOLDER, grace=GRACE, part=part, parts=parts, clock_skew_us=0, **options
    )


def counts(report: GcReport) -> Counter[str]:
    return Counter({name: getattr(report, name) for name in COUNTED})


def collect_until_clean(
    backend: Backend, parts: int, totals: Counter[str] | None = None
) -> tuple[Counter[str], dict[str, Any]]:
    """Collections (each of ``parts`` parts, one after the other), a grace period apart,
    until one finds nothing and the list is empty: what they counted, and what is left."""
    totals = Counter() if totals is None else totals
    for _round in range(10):
        found = Counter[str]()
        for k in range(1, parts + 1):
            report = run(backend, k, parts).report
            assert not report.errors
            found += counts(report)
        totals += found
        if not found and next(backend.scan(ARCHIVE_GARBAGE), None) is None:
            return totals, left(backend)
        time.sleep(GRACE + 0.05)
    raise AssertionError("the collections did not end")


def left(backend: Backend) -> dict[str, Any]:
    """What the store holds of files and references (Java's piece ids are random)."""
    return {
        "files": sorted(row["md5"] for row in backend.scan(ARCHIVE_FILES, columns=["md5"])),
        "documents": sorted({row["md5"] for row in backend.scan(DOCUMENTS, columns=["md5"])}),
        "references": sorted(
            (row["md5"], row["snapshot"])
            for row in backend.scan(SNAPSHOTS_BY_DOCUMENT, columns=["md5", "snapshot"])
        ),
        "pieces": sum(1 for _ in backend.scan(DOCUMENTS_DATA, columns=["data_id"])),
    }


@contextmanager
def other_store(backend: Backend, tmp_path: Path) -> Iterator[Backend]:
    """A store beside the one under test, for a whole collection to compare with (on
    Cassandra the test's keyspace itself, emptied afterwards)."""
    if isinstance(backend, SQLiteBackend):
        with SQLiteBackend(tmp_path / "whole") as other:
            yield other
        return
    yield backend
    backend.truncate_all()  # type: ignore[attr-defined]


def whole_collection(backend: Backend, tmp_path: Path) -> tuple[Counter[str], dict[str, Any]]:
    """What whole collections do to the filled store, until it is clean."""
    with other_store(backend, tmp_path) as other:
        fill(other)
        return collect_until_clean(other, 1)


def test_parts_together_do_what_whole_collections_do(backend: Backend, tmp_path: Path) -> None:
    want, clean = whole_collection(backend, tmp_path)
    # 3 deleted + 3 Java-deleted files (and the 3 files their gone snapshots referred to),
    # 3 unused Java files; 4 Java pieces no file lists; 3 references of gone snapshots
    assert want["removed_files"] == 12 and want["listed_files"] == 12
    assert want["java_pieces_removed"] == 4 and want["dangling_refs_removed"] == 3
    assert want["empty_refs_removed"] == 1 and want["removed_pieces"] > 4
    fill(backend)
    got, after = collect_until_clean(backend, 3)
    assert got == want and after == clean
    books = CheckBooks(backend).names("gc")
    assert not [name for name in books if "lease" not in name]  # plan and books gone


def test_a_stopped_run_goes_on_where_it_stood(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want, clean = whole_collection(backend, tmp_path)
    fill(backend)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    first = counts(run(backend).report)  # lists
    time.sleep(GRACE + 0.05)
    with pytest.raises(KeyboardInterrupt):  # in the walk over the list: removing
        run(backend, progress=stops_at(4))
    resumed = run(backend)
    assert resumed.resumed.startswith("listed, after 4 partitions")
    got, after = collect_until_clean(backend, 1, first + counts(resumed.report))
    assert got == want and after == clean
    assert run(backend).resumed == ""  # finished: the next one begins


class _StopsInARemoval(DelegatingBackend):
    """Ctrl-C in the middle of removing a file: at its ``documents`` rows' delete, after
    its record went (``files.release_file``)."""

    def __init__(self, inner: Backend, deletes: int) -> None:
        super().__init__(inner)
        self.deletes = deletes

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        if table is DOCUMENTS:
            self.deletes -= 1
            if self.deletes == 0:
                raise KeyboardInterrupt
        self.inner.delete(table, key, written_before=written_before)


def test_stopped_inside_a_removal_nothing_counts_twice(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file half removed when the run stopped: the next run finds it still listed,
    removes the rest and counts it once."""
    want, clean = whole_collection(backend, tmp_path)
    fill(backend)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    first = counts(run(backend).report)
    time.sleep(GRACE + 0.05)
    with pytest.raises(KeyboardInterrupt):
        run(_StopsInARemoval(backend, deletes=3))
    resumed = run(backend)
    assert resumed.resumed.startswith("listed, after ")
    got, after = collect_until_clean(backend, 1, first + counts(resumed.report))
    assert got == want and after == clean


def test_restart_begins_again(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(backend)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)

    def interrupt(walk: str) -> None:
        if walk == "pieces":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(backend, dry_run=True, progress=interrupt)
    assert CheckBooks(backend).read("gc-dry-run/1/1") is not None
    assert CheckBooks(backend).read("gc/1/1") is None  # a dry run keeps a book of its own
    again = run(backend, dry_run=True, restart=True)
    assert again.resumed == ""
    assert again.report.listed_files == 9 and again.report.java_pieces_listed == 4
    assert next(backend.scan(ARCHIVE_GARBAGE), None) is None  # dry: nothing listed


def test_one_process_per_part(backend: Backend) -> None:
    fill(backend)
    books = CheckBooks(backend)
    assert books.take_lease("gc-lease/1/1", "someone@else:1:x", 60_000) == ""
    with pytest.raises(BusyError, match="another process"):
        run(backend)
    assert run(backend, 1, 2).report.listed_files >= 0  # another part is free


KILLED = """
import json, socket
from imixs_archive.archive.gc_runs import gc_part
holder = f"test@{socket.gethostname()}:{os.getpid()}:killed"
with open_archive(load_settings(dict(os.environ))) as archive:
    done = gc_part(
        archive.backend, holder=holder, grace=0.4, part=int(sys.argv[1]),
        parts=int(sys.argv[2]), progress=step, clock_skew_us=0,
    )
print(json.dumps({"resumed": done.resumed, "part": done.part, "report": vars(done.report)}))
"""


def test_a_killed_part_goes_on_where_it_stood(
    backend: Backend, tmp_path: Path, store_settings: Settings
) -> None:
    """Part 1 of 2 killed while it removes, part 2 run meanwhile, part 1 run again: it goes
    on after the last partition it saved, and the collections end as whole ones do."""
    want, clean = whole_collection(backend, tmp_path)
    fill(backend)
    totals = counts(run(backend, 1, 2).report) + counts(run(backend, 2, 2).report)
    time.sleep(GRACE + 0.05)
    env = process_env(store_settings)
    run_killed(KILLED, "1", "2", env=env, at=3)
    totals += counts(run(backend, 2, 2).report)
    again = run_script(KILLED, "1", "2", env=env)
    assert again.returncode == 0, again.stderr
    resumed = json.loads(again.stdout)
    assert resumed["resumed"].startswith("listed, after 3 partitions")
    assert resumed["part"] == 1
    totals += Counter({name: resumed["report"][name] for name in COUNTED})
    got, after = collect_until_clean(backend, 2, totals)
    assert got == want and after == clean


def test_the_command_parts_goes_on_and_refuses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gc --part K/N``: its part in words and JSON, one line and exit 2 for a bad part,
    exit 75 while another process runs it, and a stopped one goes on."""
    folder = tmp_path / "store"
    with SQLiteBackend(folder) as backend:
        fill(backend)
    data = ["--data-dir", str(folder)]
    monkeypatch.setenv("ARCHIVE_GC_GRACE", "3600")
    for bad in ("3/2", "x", "0/2"):
        assert main(["gc", "--part", bad, *data]) == 2
        err = capsys.readouterr().err
        assert "--part: expected K/N" in err and len(err.strip().splitlines()) == 1
    assert main(["gc", "--part", "1/2", *data]) == 0
    out = capsys.readouterr().out
    assert out.startswith("part 1 of 2:\n") and "reclaimable" not in out
    assert main(["gc", "--part", "2/2", "--json", *data]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["part"], report["parts"], report["resumed"]) == (2, 2, None)
    with SQLiteBackend(folder) as backend:
        books = CheckBooks(backend)
        assert books.take_lease("gc-lease/1/1", "someone@else:1:x", 60_000) == ""
    assert main(["gc", *data]) == 75
    assert "another process" in capsys.readouterr().err
    with SQLiteBackend(folder) as backend:
        CheckBooks(backend).release_lease("gc-lease/1/1", "someone@else:1:x")
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    stop = stops_at(2)
    real = Archive.gc_part

    def stopping(self: Archive, *args: Any, **kwargs: Any) -> GcRun:
        return real(self, *args, **{**kwargs, "progress": stop})

    monkeypatch.setattr(Archive, "gc_part", stopping)
    assert main(["gc", "--dry-run", *data]) == 130
    assert "`gc --dry-run` goes on where it stopped" in capsys.readouterr().out
    monkeypatch.setattr(Archive, "gc_part", real)
    assert main(["gc", "--dry-run", *data]) == 0
    out = capsys.readouterr().out
    assert "went on from listed, after 2 partitions" in out and "reclaimable by gc" in out
