"""Backup to plain files, in the layout of the Java backup service.

One XML file per process instance holding its newest snapshot with the file contents:
``<root>/<yyyy>/<MM>/<origin uniqueid>.xml``, year and month from ``$created``. With
``all_snapshots`` every snapshot is written, as ``<root>/<yyyy>/<MM>/<snapshot id>.xml``.

Streamed: attachment bytes flow from the store into the file piece by piece. Files appear
whole or not at all (written as a hidden ``.part`` of each writer's own, then renamed).
Durable when :func:`backup` returns: each file's bytes are fsynced before it is renamed,
the rename and the folders leading to it after (on a thread of their own, see
``durable_files``, while the next file is written), so a backup that returned survives a
power loss, and a crash or power loss during one leaves whole files or the ones before
under the final names. Incremental: a file already there holding the same snapshot is not
written again; what each file holds is recorded in ``<root>/.imixs-archive-backup`` (one
``path<TAB>snapshot id`` line each, written once the file is durably in place; the last
wins).
A tree written by someone else (the Java backup service) has no such record: the snapshot
id is then read from the existing file, streaming past its attachments.

A backup of everything (no days) walks the process instances and keeps a book of where it
stands, so that a stopped one goes on there and N processes can share one
(``--part K/N``): ``backup_book.py``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import Any, TextIO, TypedDict, Unpack

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import origin_id, snapshot_order
from imixs_archive.document.xml_reader import discard_files, iter_xml_documents
from imixs_archive.errors import ArchiveError, ConfigError, NotFoundError
from imixs_archive.recovery.backup_book import BackupBook, BackupSummary, Tally
from imixs_archive.recovery.durable_files import Placed, Placer, existing_ancestor
from imixs_archive.services.job_runs import Outcome, recorded
from imixs_archive.services.jobs import MAX_LISTED
from imixs_archive.services.workers import Send, Spread, run_in_workers
from imixs_archive.timezones import day_span

MANIFEST = ".imixs-archive-backup"
STALE_PART_S = 24 * 3600
"""A ``.part`` file untouched this long was left by a writer that died (whichever host)."""
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
"""This host, in the names of the parts it writes: whether their writer still runs can be
known only here."""
_PART = re.compile(r"\..+\.xml\.([0-9a-f]{8})-(\d+)-[0-9a-f]{8}\.part")


@dataclass(frozen=True)
class DayRange:
    """The days of ``$modified`` from ``first`` to ``last``, days of the time zone ``tz``:
    an end not given is open (from 1970, to today); neither given, the whole archive."""

    first: dt.date | None = None
    last: dt.date | None = None
    tz: dt.tzinfo = dt.UTC

    @property
    def whole(self) -> bool:
        return self.first is None and self.last is None

    def snapshot_ids(self, archive: Archive) -> Iterator[str]:
        """Every snapshot of the days, day by day: the day index's walk, for a range (the
        whole archive is walked by instance)."""
        start, end = day_span(self.first, self.last, self.tz)
        for _day, snapshot_id in archive.days.iter_local_days(start, end, self.tz):
            yield snapshot_id


ALL_DAYS = DayRange()
"""No days given: a backup of everything."""


def newest_per_instance(archive: Archive, days: DayRange = ALL_DAYS) -> Iterator[str]:
    """The newest snapshot of each process instance (within the days given)."""
    if days.whole:
        yield from _newest_of_every_instance(archive)
        return
    newest: dict[str, str] = {}
    for snapshot_id in days.snapshot_ids(archive):
        origin = origin_id(snapshot_id)
        if origin not in newest or snapshot_order(snapshot_id) > snapshot_order(newest[origin]):
            newest[origin] = snapshot_id
    yield from newest.values()


def _newest_of_every_instance(archive: Archive) -> Iterator[str]:
    """One pass over the instances, one at a time: memory stays flat."""
    for ids in archive.index.iter_instances():
        newest = next((sid for sid in reversed(ids) if archive.exists(sid)), None)
        if newest is not None:
            yield newest


def backup_path(
    root: Path, created: dt.datetime | None, snapshot_id: str, all_snapshots: bool
) -> Path:
    """Where a snapshot ``$created`` then goes (its ``$modified`` when it has none)."""
    if created is None:
        raise ArchiveError(f"snapshot {snapshot_id} has no $created date")
    name = snapshot_id if all_snapshots else origin_id(snapshot_id)
    return _inside(root, f"{created.year:04d}", f"{created.month:02d}", f"{name}.xml")


def _inside(root: Path, *parts: str) -> Path:
    """``root / parts`` if that names a file inside ``root``: the (legacy) id pattern admits
    ``/``, ``..`` and control characters, which must never lead a write elsewhere."""
    for part in parts:
        if part in ("", ".", "..") or any(ord(c) < 32 or c in "/\\" for c in part):
            raise ArchiveError(f"{part!r} cannot be a file name in a backup folder")
    path = root.joinpath(*parts)
    inner = os.path.relpath(os.path.normpath(path), os.path.normpath(root))
    if inner == os.curdir or inner.split(os.sep)[0] == os.pardir or os.path.isabs(inner):
        raise ArchiveError(f"{path} is outside the backup folder {root}")
    return path


def check_parts(days: DayRange, parts: int) -> None:
    """Parts split a backup of everything, not one of days (a ConfigError)."""
    if parts > 1 and not days.whole:
        raise ConfigError("--part splits a backup of everything: not one of --from / --to")


def backup(
    archive: Archive,
    root: Path,
    **asked: Unpack[BackupAsked],
) -> BackupSummary:
    """:func:`backup_folder`, recorded as the last backup (``services/job_runs.py``)."""
    with recorded(archive, "backup") as outcome:
        summary = backup_folder(archive, root, **asked)
        record_outcome(outcome, summary, str(root))
    return summary


def record_outcome(outcome: Outcome, summary: BackupSummary, target: str) -> None:
    """What a backup's record keeps of it."""
    outcome.ok = summary.failed == 0
    outcome.message = summary.words(target)
    outcome.result = summary.result(target, MAX_LISTED)


class BackupAsked(TypedDict, total=False):
    """The keywords of :func:`backup_folder`."""

    days: DayRange
    all_snapshots: bool
    on_snapshot: Callable[[str], None] | None
    spread: Spread | None
    part: int
    parts: int
    restart: bool
    on_resumed: Callable[[int], None] | None


def backup_folder(
    archive: Archive,
    root: Path,
    *,
    days: DayRange = ALL_DAYS,
    all_snapshots: bool = False,
    on_snapshot: Callable[[str], None] | None = None,
    spread: Spread | None = None,
    part: int = 1,
    parts: int = 1,
    restart: bool = False,
    on_resumed: Callable[[int], None] | None = None,
) -> BackupSummary:
    """``days``: the ``$modified`` days whose snapshots are written (all). ``spread``: write
    the files in worker processes (``workers``); the snapshots are chosen here either way,
    and the manifest is written here only. A backup of everything (no days) goes on where
    a stopped one into the same folder stood unless ``restart``, and can be split:
    ``part`` of ``parts`` of the instances (``backup_book.py``). BusyError when another
    process runs this part; ConfigError for parts of a backup of days. ``on_resumed``: the
    snapshots the runs this one goes on from settled (for a progress bar), when it does."""
    check_parts(days, parts)
    if not days.whole:
        ids = days.snapshot_ids(archive) if all_snapshots else newest_per_instance(archive, days)
        tally = Tally()
        _write(archive, root, ids, all_snapshots, tally, on_snapshot, spread)
        return tally.total()
    key = f"{root.resolve()}|{'every snapshot' if all_snapshots else 'newest'}"
    name = f"backup.{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    with archive.open_instance_run(
        name=name, key=key, part=part, parts=parts, restart=restart
    ) as run:
        book = BackupBook(run)
        if book.before is not None and on_resumed is not None:
            on_resumed(book.before.written + book.before.current + book.before.failed)
        try:
            chosen = _chosen(archive, book, all_snapshots)
            _write(archive, root, chosen, all_snapshots, book, on_snapshot, spread)
        except BaseException:
            with contextlib.suppress(Exception):  # the error at hand says more
                book.save()
            raise
        run.finish()
    return book.total()


def _chosen(archive: Archive, book: BackupBook, all_snapshots: bool) -> Iterator[str]:
    """The snapshots to write of each instance of the book's part, handed out to it."""
    for position, ids in book.instances():
        if all_snapshots:
            found = [snapshot_id for snapshot_id in ids if archive.exists(snapshot_id)]
        else:
            newest = next((sid for sid in reversed(ids) if archive.exists(sid)), None)
            found = [newest] if newest is not None else []
        yield from book.hand_out(position, found)


def _write(
    archive: Archive,
    root: Path,
    ids: Iterable[str],
    all_snapshots: bool,
    tally: Tally,
    on_snapshot: Callable[[str], None] | None,
    spread: Spread | None,
) -> None:
    """Write the files of ``ids``, each settled in ``tally`` once done with."""
    top = existing_ancestor(root)
    root.mkdir(parents=True, exist_ok=True)
    with (root / MANIFEST).open("a", encoding="utf-8") as record:
        folder_errors: list[OSError] = []

        def on_message(message: tuple[str, Any]) -> None:
            kind, value = message
            if kind == "placed":
                _record(value, root, record, tally)
            elif kind == "settled":
                tally.settle(*value)
            elif kind == "snapshot":
                if on_snapshot is not None:
                    on_snapshot(value)
            elif value is not None:  # "folders": one that could not be made durable
                folder_errors.append(value)

        task = _BackupTask(root, top, all_snapshots)
        try:
            ids = iter(ids)
            head = list(islice(ids, spread.least)) if spread is not None and spread.jobs > 1 else []
            if spread is not None and head and len(head) == spread.least:
                run_in_workers(
                    spread, task, _in_batches(chain(head, ids), BATCH), on_message, archive
                )
            else:
                task.run_here(archive, chain(head, ids), on_message)
        finally:
            _sync_record(record, folder_errors[0] if folder_errors else None, tally.summary)


BATCH = 4
"""Snapshots handed to a worker at a time."""


def _in_batches(ids: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for snapshot_id in ids:
        batch.append(snapshot_id)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class _BackupTask:
    """Writes the files of the snapshots it is given and reports them: ``placed`` (the
    files now durably in place, for the manifest), ``settled`` (a snapshot found current
    or failed, with that count), ``snapshot`` (one done, for progress), and at the end
    ``folders`` (a folder that could not be made durable). Run in a worker, or here for
    one process."""

    def __init__(self, root: Path, top: Path, all_snapshots: bool) -> None:
        self.root = root
        self.top = top
        self.all_snapshots = all_snapshots
        self._writer: _Writer | None = None

    def run(self, archive: Archive, batch: list[str], send: Send) -> None:
        if self._writer is None:
            self._writer = _Writer(archive, self.root, self.top, self.all_snapshots)
        for snapshot_id in batch:
            placed, outcome = self._writer.write(snapshot_id)
            send(("placed", placed))
            if outcome is not None:  # nothing to put in place: settled now
                send(("settled", (snapshot_id, outcome)))
            send(("snapshot", snapshot_id))

    def finish(self, send: Send) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            send(("placed", writer.close()))
            send(("folders", writer.placer.folder_error))

    def session(self, archive: Archive) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()  # each file is made durable on its own (durable_files.py)

    def run_here(self, archive: Archive, ids: Iterable[str], send: Send) -> None:
        try:
            for snapshot_id in ids:
                self.run(archive, [snapshot_id], send)
        finally:
            self.finish(send)


class _Writer:
    """One process's writing of backup files: each file durable, then renamed into place
    (on the ``Placer``'s thread)."""

    def __init__(self, archive: Archive, root: Path, top: Path, all_snapshots: bool) -> None:
        self.archive = archive
        self.root = root
        self.all_snapshots = all_snapshots
        self.manifest = _read_manifest(root)
        self.placer = Placer(top)
        self.folders: set[Path] = set()

    def write(self, snapshot_id: str) -> tuple[list[Placed], BackupSummary | None]:
        """Write one snapshot's file (or find it current); the files now in place, and
        what the snapshot counted when it is settled now (current, failed), not once its
        file is in place."""
        outcome = BackupSummary()
        try:
            handed = _backup_one(
                self.archive,
                self.root,
                snapshot_id,
                self.all_snapshots,
                self.manifest,
                self.placer,
                outcome,
                self.folders,
            )
        except NotFoundError:  # deleted since the walk found it (retention, a delete)
            handed = False  # not in the archive any more: nothing to back up, no failure
        except ArchiveError as exc:
            outcome.fail(snapshot_id, exc)
            handed = False
        return self.placer.done(), None if handed else outcome

    def close(self) -> list[Placed]:
        """Wait for every file to be in place and its folders durable."""
        try:
            return self.placer.close()
        finally:
            _sweep_parts(self.folders)


def _record(finished: list[Placed], root: Path, record: TextIO, tally: Tally) -> None:
    """Note what each file now in place (durably) holds in the manifest, and settle its
    snapshot; a file that could not be put in place is a failure of its snapshot."""
    for placed in finished:
        token: tuple[str, int] = placed.token  # type: ignore[assignment]
        snapshot_id, size = token  # what _backup_one handed over
        outcome = BackupSummary()
        if placed.error is not None:
            reason = placed.error.strerror or placed.error
            outcome.fail(snapshot_id, f"cannot write {placed.path}: {reason}")
        else:
            record.write(f"{placed.path.relative_to(root)}\t{snapshot_id}\n")
            outcome.written = 1
            outcome.bytes_written = size  # only what is in place: a full disk wrote less
        tally.settle(snapshot_id, outcome)
    record.flush()


def _sync_record(record: TextIO, folder_error: OSError | None, summary: BackupSummary) -> None:
    """The manifest durable too (else a later run reads the files to learn what they hold)."""
    problem = folder_error
    try:
        os.fsync(record.fileno())
    except OSError as exc:
        problem = problem or exc
    if problem is not None:
        summary.fail("cannot make the backup durable", problem.strerror or problem)


def _backup_one(
    archive: Archive,
    root: Path,
    snapshot_id: str,
    all_snapshots: bool,
    manifest: dict[str, str],
    placer: Placer,
    summary: BackupSummary,
    folders: set[Path],
) -> bool:
    """Write the snapshot's file: True once handed to the placer (settled when in place),
    False when the file there is current (counted in ``summary``)."""
    xml = archive.xml_with_files(snapshot_id)
    path = backup_path(root, xml.created, snapshot_id, all_snapshots)
    relative = str(path.relative_to(root))
    if path.exists() and _held_snapshot(path, manifest.get(relative)) == snapshot_id:
        summary.current += 1
        folders.add(path.parent)  # swept too: a killed run may have left parts there
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    folders.add(path.parent)
    partial = _partial(path)
    try:
        out = partial.open("wb")
    except OSError as exc:
        raise ArchiveError(f"cannot write {path}: {exc.strerror or exc}") from None
    size = 0
    try:
        for piece in xml.iter_bytes():
            out.write(piece)
            size += len(piece)
        placer.place(out, partial, path, (snapshot_id, size))  # closed: durable, renamed
    except BaseException as exc:
        with contextlib.suppress(OSError):  # a full disk fails the close too
            out.close()
        partial.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ArchiveError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    manifest[relative] = snapshot_id
    return True


def _partial(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place: a name of this writer's
    own. Two backups into one folder at once (the scheduled one and a manual one) each
    truncated and wrote over a shared ``.part``, and one of them then renamed a file with
    zeros where the other had cut it. The host and the process are in the name, so that a
    part whose writer died is known as such (``_sweep_parts``)."""
    return path.with_name(f".{path.name}.{_HOST}-{os.getpid()}-{secrets.token_hex(4)}.part")


def _sweep_parts(folders: set[Path]) -> None:
    """Remove the parts writers that died left in these folders: at once when written on
    this host by a process that no longer runs (a killed backup, run again), else once
    untouched for ``STALE_PART_S`` (a part being written is touched by every write)."""
    limit = time.time() - STALE_PART_S
    for folder in folders:
        for part in folder.glob(".*.xml.*-*.part"):  # this module's names only
            with contextlib.suppress(OSError):
                found = _PART.fullmatch(part.name)
                dead = found is not None and found[1] == _HOST and not _running(int(found[2]))
                if dead or part.stat().st_mtime < limit:
                    part.unlink()


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (one that ended, not yet reaped, does not)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # no /proc: it exists


def _read_manifest(root: Path) -> dict[str, str]:
    held: dict[str, str] = {}
    path = root / MANIFEST
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            relative, _, snapshot_id = line.partition("\t")
            if snapshot_id:
                held[relative] = snapshot_id
    return held


def _held_snapshot(path: Path, recorded: str | None) -> str | None:
    """The snapshot id a backup file holds: recorded, else read (past its attachments)."""
    if recorded is not None:
        return recorded
    try:
        with path.open("rb") as stream:
            for doc in iter_xml_documents(stream, file_sink=discard_files):
                uid = doc.get_first("$uniqueid")
                return uid if isinstance(uid, str) else None
    except (ArchiveError, OSError):
        return None  # unreadable: write it again
    return None
