"""A table export to a file that stops and goes on, alone or split into parts.

The export walks the process instances in the store's range order (``export_table.py``),
so ``--part K/N`` gives each of N processes, on one machine or several, a range of its own
(``archive/instance_runs.py``: the lease, the plan of cuts and the book): part K writes
``OUT`` named ``<stem>.part-K-of-N<suffix>``, and the N files together hold every row of
the export once.

What is durable, and when: rows are written in batches of ``batch_rows`` into **pieces**,
files in a hidden folder beside the output (``.<name>.export/``). Every few seconds
(``part_runs.SAVE_MS``), and when Ctrl-C stops the run, the rows of the instances read so
far are written, the piece is closed (a whole Parquet file, footer and all, or CSV lines
without the header), made durable (fsync, then its folder), and only then is the book
written: the place after the last instance in it, with the pieces, the counts and the
columns. A run that goes on (the same command again) keeps the pieces its book names,
removes any other (written after the last save by a run that was killed) and reads on
after the place. At the end the pieces are joined into the output (Parquet: row groups of
``batch_rows`` again, the file an export in one go writes; CSV: the header, then the
pieces' bytes), fsynced, renamed into place, and the book and pieces go. A kill while
joining joins them again. So an export stopped anywhere ends with exactly the rows of the
whole export, none twice; what it costs is writing the output twice.

The columns' types are those of the first batch (``columns.py``): kept in the book, so a
run that goes on writes the types it began with; for parts, in a book all N parts share
(the first part to read a batch decides them).

A range of days of every snapshot (``--from`` and ``--to``, not ``--newest``) walks the
days, not the instances: written in one go, neither split nor taken up again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, Any

from imixs_archive.analytics.columns import Column, infer
from imixs_archive.analytics.export_table import (
    FIXED_COLUMNS,
    ExportSpec,
    ExportSummary,
    TableWriter,
    by_days,
    check_spec,
    export_table,
    instance_walk,
    open_writer,
    to_rows,
)
from imixs_archive.archive.instance_runs import OpenRun
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document
from imixs_archive.durable import sync_file, sync_folder, whole_file
from imixs_archive.errors import ConfigError
from imixs_archive.storage.base import Position

JOB = "export-table"


def part_path(path: Path, part: int, parts: int) -> Path:
    """The file part ``part`` of ``parts`` writes: ``OUT`` itself for one part."""
    if parts == 1:
        return path
    return path.with_name(f"{path.stem}.part-{part}-of-{parts}{path.suffix}")


def spec_key(spec: ExportSpec) -> str:
    """What an export was asked, in one line: a run goes on only for the same."""
    items = [f"{s.item}:{s.kind or ''}:{s.multi}" for s in spec.items]
    return json.dumps(
        [
            items,
            str(spec.first),
            str(spec.last),
            spec.newest_only,
            spec.format,
            spec.batch_rows,
            str(spec.tz),
        ]
    )


def export_to_file(
    archive: Archive,
    spec: ExportSpec,
    path: Path,
    *,
    part: int = 1,
    parts: int = 1,
    restart: bool = False,
    seen: Callable[[], None] | None = None,
) -> ExportSummary:
    """Write part ``part`` of ``parts`` of the export to its file (:func:`part_path`),
    going on where a stopped run of the same export to the same file stood unless
    ``restart``; ``seen`` after each instance. BusyError when another process runs this
    part; ConfigError for parts of an export by days."""
    check_spec(spec)
    check_parts(spec, parts)
    if by_days(spec):
        return _in_one_go(archive, spec, path)
    key = spec_key(spec)
    name = f"{JOB}.{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    target = part_path(path, part, parts)
    if not target.parent.is_dir():  # said before a lease or a plan is taken
        raise ConfigError(f"cannot write {target}: no folder {target.parent}")
    with archive.open_instance_run(
        name=name, key=f"{key}|{target.resolve()}", part=part, parts=parts, restart=restart
    ) as run:
        return _PartExport(archive, spec, run, target).export(seen)


def check_parts(spec: ExportSpec, parts: int) -> None:
    """Parts split an export over the instances, not one by days (a ConfigError)."""
    if parts > 1 and by_days(spec):
        raise ConfigError(
            "--part splits an export over the instances: give --newest, or not both --from and --to"
        )


def _in_one_go(archive: Archive, spec: ExportSpec, path: Path) -> ExportSummary:
    with whole_file(path, path.with_name(f".{path.name}.partial"), durable=True) as out:
        return export_table(archive, spec, out)


class _PartExport:
    """One part's run: the walk, the pending rows, the pieces and the book."""

    def __init__(self, archive: Archive, spec: ExportSpec, run: OpenRun, target: Path) -> None:
        self.archive, self.spec, self.run, self.target = archive, spec, run, target
        self.size = max(1, spec.batch_rows)
        self.pieces = _Pieces(target.with_name(f".{target.name}.export"), spec.format)
        self.summary = ExportSummary()
        self.columns: list[Column] | None = None
        self.sample: list[tuple[str, Document]] = []
        self.pending: list[list[Any]] = []

    def export(self, seen: Callable[[], None] | None) -> ExportSummary:
        started = time.perf_counter()
        self._take_up()
        self.summary.resumed = self.run.resumed
        place = self.run.start()
        with _interrupt_deferred() as interrupted:
            for at, found in instance_walk(self.archive, self.spec, place, self.run.upto):
                self._add(found)
                place = at
                self.run.met += 1
                try:
                    if seen is not None:
                        seen()
                    if interrupted.is_set():
                        raise KeyboardInterrupt
                except KeyboardInterrupt:  # between instances: what was read is kept
                    self._save(place)
                    raise
                if self.run.clock.due():
                    self._save(place)
        self._decide_columns()
        self._save(place)
        self._join()
        self.run.finish(shared=["columns"])
        self.pieces.remove()
        self.summary.seconds = time.perf_counter() - started
        return self.summary

    def _take_up(self) -> None:
        """The state of the run this one goes on from, its pieces checked; else a start
        with no pieces."""
        saved = self.run.saved
        if saved is not None and self.pieces.keep(saved["pieces"]):
            self.summary.rows, self.summary.batches = saved["rows"], saved["batches"]
            self.summary.warnings = saved["warnings"]
            if saved["columns"] is not None:
                self._use_columns(saved["columns"])
            return
        self.run.begin_again()
        self.pieces.keep([])

    def _add(self, found: list[tuple[str, Document]]) -> None:
        """One instance's rows: pending, and written batch by batch."""
        if self.columns is None:
            self.sample.extend(found)
            if len(self.sample) < self.size:
                return
            self._decide_columns()
        else:
            self.pending.extend(to_rows(found, self.columns, self.summary.warnings))
        while len(self.pending) >= self.size:
            self._write(self.pending[: self.size])
            del self.pending[: self.size]

    def _decide_columns(self) -> None:
        """The columns, from the sample (or the book the parts share), its rows pending."""
        if self.columns is not None:
            return
        columns = [*FIXED_COLUMNS, *infer(self.spec.items, [doc for _, doc in self.sample])]
        mine = {"columns": _encoded(columns)}
        shared = self.run.plan_book("columns", mine if self.sample else None)
        self._use_columns(shared["columns"] if shared is not None else mine["columns"])
        assert self.columns is not None
        self.pending = to_rows(self.sample, self.columns, self.summary.warnings)
        self.sample = []

    def _use_columns(self, encoded: list[list[Any]]) -> None:
        self.columns = [Column(str(n), str(k), bool(m)) for n, k, m in encoded]
        self.summary.columns = self.columns

    def _write(self, rows: list[list[Any]]) -> None:
        assert self.columns is not None
        self.pieces.write(self.columns, rows)
        self.summary.rows += len(rows)
        self.summary.batches += 1

    def _save(self, place: Position | None) -> None:
        """The rows read so far durable in a piece, then the book: the place after them."""
        if self.columns is None:
            return  # still the first batch: nothing written, the book stays as it was
        if self.pending:
            self._write(self.pending)
            self.pending = []
        self.pieces.close()
        state = {
            "pieces": self.pieces.done,
            "rows": self.summary.rows,
            "batches": self.summary.batches,
            "warnings": self.summary.warnings,
            "columns": _encoded(self.columns),
        }
        self.run.save_job(place, state)

    def _join(self) -> None:
        """The pieces as the output file, durable, renamed into place."""
        assert self.columns is not None
        joined = self.pieces.folder / "joined"
        with joined.open("wb") as out:
            groups = self.pieces.join(self.columns, out, self.size)
            sync_file(out)
        if groups is not None:
            self.summary.batches = groups
        joined.replace(self.target)
        _sync_folder(self.target.parent)


def _encoded(columns: list[Column]) -> list[list[Any]]:
    return [[c.name, c.kind, c.multi] for c in columns]


class _Pieces:
    """The pieces of one part's output in its hidden folder: the one being written, and
    those done (made durable, named in the book)."""

    def __init__(self, folder: Path, format: str) -> None:
        self.folder, self.format = folder, format
        self.done: list[dict[str, Any]] = []
        self._file: IO[bytes] | None = None
        self._writer: TableWriter | None = None
        self._name = ""

    def keep(self, done: list[dict[str, Any]]) -> bool:
        """Keep the pieces a book names, the others removed; False (and none kept) when
        one of them is missing or not as long as it was (the run begins again)."""
        try:
            self.folder.mkdir(exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot write {self.folder}: {exc.strerror or exc}") from None
        named = {str(piece["name"]): int(piece["size"]) for piece in done}
        whole = all(_size(self.folder / name) == size for name, size in named.items())
        for found in self.folder.iterdir():
            if not whole or found.name not in named:
                found.unlink()
        self.done = list(done) if whole else []
        return whole

    def write(self, columns: list[Column], rows: list[list[Any]]) -> None:
        if self._writer is None:
            self._name = f"{len(self.done) + 1:06d}.{self.format}"
            self._file = (self.folder / self._name).open("wb")
            self._writer = open_writer(self.format, columns, self._file, header=False)
        self._writer.write_batch(rows)

    def close(self) -> None:
        """The piece being written closed and durable (then its name in the folder)."""
        if self._writer is None or self._file is None:
            return
        self._writer.close()
        sync_file(self._file)
        self._file.close()
        _sync_folder(self.folder)
        self.done.append({"name": self._name, "size": _size(self.folder / self._name)})
        self._writer = self._file = None

    def paths(self) -> list[Path]:
        return [self.folder / str(piece["name"]) for piece in self.done]

    def join(self, columns: list[Column], out: IO[bytes], batch_rows: int) -> int | None:
        """The pieces, in order, as one file to ``out``: the row groups written (Parquet)."""
        if self.format == "parquet":
            from imixs_archive.analytics.parquet import join_parquet

            return join_parquet(self.paths(), columns, out, batch_rows)
        open_writer("csv", columns, out).close()  # the header line
        for path in self.paths():
            with path.open("rb") as piece:
                shutil.copyfileobj(piece, out)
        return None

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every system opens a folder to sync it
        sync_folder(folder)


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[threading.Event]:
    """Ctrl-C (SIGINT) in the block sets the event instead of raising where it lands: the
    export stops between two instances, where what it read and what it wrote agree. A
    second Ctrl-C raises at once (a read that hangs): the book stays at its last save. Off
    the main thread (no signal arrives there) the event is never set."""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def note(_signum: int, _frame: FrameType | None) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
