"""Making a file's bytes and a folder's names durable (``fsync``): for everyone who writes
plain files the archive relies on (the SQLite store's file, backups, exports, the ledger's
keys)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from imixs_archive.errors import ConfigError


def sync_file(out: IO[bytes]) -> None:
    """What was written to ``out`` durable: flushed, then fsynced."""
    out.flush()
    os.fsync(out.fileno())


def sync_folder(folder: Path) -> None:
    """The entries of ``folder`` (new names, renames) durable. OSError where the system
    cannot open a folder to sync it."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def whole_file(path: Path, partial: Path, *, durable: bool = False) -> Iterator[IO[bytes]]:
    """A file at ``path`` that appears only once the block completes: the block writes
    ``partial``, renamed to ``path`` at its end, removed when it raises. ``durable``: the
    bytes fsynced before the rename and the folder's names after it. ConfigError (one
    line) when ``partial`` cannot be opened."""
    try:
        try:
            opened = partial.open("wb")
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
        with opened as out:
            yield out
            if durable:
                sync_file(out)
        partial.replace(path)
        if durable:
            with contextlib.suppress(OSError):  # not every system opens a folder to sync it
                sync_folder(path.parent)
    finally:
        partial.unlink(missing_ok=True)
