"""Making a file's bytes and a folder's names durable (``fsync``): for everyone who writes
plain files the archive relies on (the SQLite store's file, backups, exports, the ledger's
keys)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO


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
