"""The one place that opens the store and builds the ``Archive`` over it, from the settings:
for the CLI, the web app, worker processes and an export's target. Every archive a program
uses is built here the same way (the collector's grace period, the memory for reading large
snapshots), so none can differ by where it was made."""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Callable

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.versions import check_store_version
from imixs_archive.config import Settings
from imixs_archive.storage.base import Backend
from imixs_archive.storage.factory import open_backend

MiB = 1024 * 1024


def build_archive(
    backend: Backend,
    settings: Settings,
    *,
    wrap: Callable[[Backend], Backend] | None = None,
    owns_backend: bool = False,
    writes: bool = True,
) -> Archive:
    """The archive over an open store (``wrap``: a layer around it, e.g. the web's metrics).
    ``owns_backend``: closing the archive closes the store. A store of a layout newer than
    this version knows is refused (``archive/versions.py``); ``writes``: the version is
    recorded where it is missing (a command that only reads records nothing)."""
    check_store_version(backend, record=writes)
    store = wrap(backend) if wrap is not None else backend
    return Archive(
        store,
        gc_grace=settings.gc_grace,
        read_memory=settings.read_memory_mb * MiB,
        file_cuts=settings.file_cuts,
        java_writes=settings.java_writes,
        owns_backend=owns_backend,
        actor=process_actor(),
    )


def process_actor() -> str:
    """Who this process acts for, as the ledger names it: ``user@host``."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return f"{user}@{socket.gethostname()}"


def open_store(settings: Settings, *, create: bool = True) -> Backend:
    """The store the settings name, opened, for a program that builds its archive later
    (``serve``: the web app wraps it first, ``web/app.py``); the caller closes it."""
    return open_backend(settings, create=create)


def open_archive(settings: Settings, *, create: bool = True, writes: bool | None = None) -> Archive:
    """The store the settings name, opened (``create=False``: a store that does not exist
    is a ``NotFoundError``, nothing is created), and the archive over it, which closes it.
    ``writes``: whether the command writes (``build_archive``; by default, as ``create``:
    a command that changes only an existing archive, such as ``ledger verify``, says so)."""
    backend = open_store(settings, create=create)
    try:
        writing = create if writes is None else writes
        return build_archive(backend, settings, owns_backend=True, writes=writing)
    except BaseException:
        backend.close()
        raise
