"""Whole files put in place durably, on a thread of their own.

The caller writes a file under a part name of its own; :meth:`Placer.place` hands it over
open. The placer's thread then makes its bytes durable (``fsync``), renames it to its
final name, and makes the rename durable (``fsync`` of the folder), in that order: after
a crash or a power loss at any moment, a final name holds the whole new file or what it
held before, never a part. Meanwhile the caller writes the next file, so the disk
writes overlap with producing the bytes instead of stalling them.

:meth:`Placer.done` hands back the files placed so far (and those that failed), as they
finish; :meth:`Placer.close` waits for the rest and makes the folders leading to
them durable too. At most ``ahead`` files wait at once (their bytes sit in the page
cache meanwhile).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from imixs_archive.durable import sync_folder

_END = None


@dataclass
class Placed:
    """One file handed to :meth:`Placer.place`: ``error`` is None once it is in place,
    durably; else why not (the ``.part`` file is then gone)."""

    path: Path
    token: object
    error: OSError | None = None


@dataclass
class _Handover:
    stream: BinaryIO
    partial: Path
    placed: Placed


class Placer:
    def __init__(self, top: Path, ahead: int = 4) -> None:
        """``top``: the folder made durable last, with every folder between it and the
        files (the nearest one that existed before the files' folders were made)."""
        self._top = top
        self._todo: queue.Queue[_Handover | None] = queue.Queue(maxsize=ahead)
        self._finished: queue.SimpleQueue[Placed] = queue.SimpleQueue()
        self._folders: set[Path] = set()
        self._thread = threading.Thread(target=self._run, name="backup-place", daemon=True)
        self._thread.start()
        self._closed = False
        self.folder_error: OSError | None = None
        """Set by :meth:`close` when the folders leading to the files could not be
        made durable (the files are in place, but a power loss may lose their names)."""

    def place(self, stream: BinaryIO, partial: Path, path: Path, token: object) -> None:
        """``stream``: the ``partial`` file, open, all its bytes written (closed here,
        also on failure); blocks while ``ahead`` files wait."""
        stream.flush()
        self._folders.add(path.parent)
        self._todo.put(_Handover(stream, partial, Placed(path, token)))

    def done(self) -> list[Placed]:
        """The files finished since the last call (placed or failed)."""
        finished: list[Placed] = []
        while True:
            try:
                finished.append(self._finished.get_nowait())
            except queue.Empty:
                return finished

    def close(self) -> list[Placed]:
        """Wait for every file handed over; then make the folders from ``top`` down to
        each of them durable (the entries of new folders). The rest of :meth:`done`."""
        if not self._closed:
            self._closed = True
            self._todo.put(_END)
            self._thread.join()
        finished = self.done()
        folders = set(_between(self._top, self._folders)) if self._folders else set()
        self._folders.clear()
        try:
            for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
                sync_folder(folder)
        except OSError as exc:
            self.folder_error = exc
        return finished

    def _run(self) -> None:
        ended = False
        while not ended:
            batch: list[_Handover] = []
            handover = self._todo.get()
            while True:
                if handover is _END:
                    ended = True
                    break
                batch.append(handover)
                try:
                    handover = self._todo.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._finish(batch)

    def _finish(self, batch: list[_Handover]) -> None:
        """fsync each file, rename it, fsync the folders they are in: one folder fsync
        for the batch (the files that waited while the one before was made durable)."""
        renamed: list[_Handover] = []
        for handover in batch:
            placed = handover.placed
            try:
                with handover.stream:
                    os.fsync(handover.stream.fileno())
                handover.partial.replace(placed.path)
                renamed.append(handover)
            except Exception as exc:  # reported with its file: the thread never dies on it
                placed.error = exc if isinstance(exc, OSError) else OSError(str(exc))
                with contextlib.suppress(OSError):
                    handover.partial.unlink(missing_ok=True)
                self._finished.put(placed)
        try:
            for folder in {handover.placed.path.parent for handover in renamed}:
                sync_folder(folder)
        except OSError as exc:
            for handover in renamed:
                handover.placed.error = exc
        for handover in renamed:
            self._finished.put(handover.placed)


def _between(top: Path, folders: Iterable[Path]) -> Iterable[Path]:
    """Each folder and its parents up to ``top``."""
    yield top
    for folder in folders:
        for each in (folder, *folder.parents):
            if len(each.parts) <= len(top.parts):
                break
            yield each


def existing_ancestor(path: Path) -> Path:
    """``path`` or its nearest parent that exists: the folder whose entries change when
    the folders leading to ``path`` are made."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return path
