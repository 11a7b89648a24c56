"""Signed checkpoints (C2SP tlog-checkpoint notes) and the checkpoint folder.

A checkpoint says, signed: the log named ``origin`` had ``size`` entries and this root
hash. Whoever keeps one can later check that the log still begins with exactly those
entries (a consistency proof) and that an entry is in it (an inclusion proof).

The checkpoint folder (``ARCHIVE_LEDGER_CHECKPOINT_DIR``, formerly called the witness
folder: the archive's own process writes it, so it is no witness in C2SP's sense; for
instance a WORM mount or another host's share) gets every checkpoint as a new file,
``checkpoint-<size, 12 digits>``, never overwritten, and the log's public key as
``ledger.pub``: what the archive's operator alone cannot take back. ``ledger verify``
checks the log against the newest checkpoint there. A log started by ``ledger new-log``
keeps its copies in a subfolder named after its origin (:func:`log_folder`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from imixs_archive.config import Settings
from imixs_archive.durable import sync_file, sync_folder
from imixs_archive.errors import ConfigError, IntegrityError
from imixs_archive.tlog.note import Checkpoint, NoteError, Signer, Verifier, open_note, sign_note

_NAME = re.compile(r"checkpoint-(\d{12})\Z")
PUBLIC_KEY_FILE = "ledger.pub"


def checkpoint_dir(settings: Settings) -> str:
    """The checkpoint folder's setting (``ARCHIVE_LEDGER_CHECKPOINT_DIR``, else its old name
    ``ARCHIVE_LEDGER_WITNESS_DIR``); empty when none is set."""
    return settings.ledger_checkpoint_dir or settings.ledger_witness_dir


def log_folder(top: Path, origin: str) -> Path:
    """The folder a log's copies go to: the checkpoint folder itself when its ``ledger.pub``
    names this origin's key or there is none yet (the first log), else a subfolder named
    after the origin (a log ``ledger new-log`` started: its files must not meet the first
    log's, whose names carry only the size)."""
    try:
        recorded = (top / PUBLIC_KEY_FILE).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return top
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the ledger's checkpoint folder {top}: {exc}") from None
    if not recorded or recorded.split("+", 1)[0] == origin:
        return top
    return top / ("log-" + re.sub(r"[^A-Za-z0-9._-]", "_", origin))


def sign_checkpoint(signer: Signer, origin: str, size: int, root: bytes) -> str:
    """The signed note of a checkpoint."""
    return sign_note(Checkpoint(origin, size, root).body(), signer)


def open_checkpoint(note: str, verifiers: Sequence[Verifier], where: str) -> Checkpoint:
    """The checkpoint a note holds, once a given key's signature verifies; IntegrityError
    naming ``where`` otherwise (a note signed by another key, or changed)."""
    try:
        opened = open_note(note, verifiers)
        return Checkpoint.parse(opened.text)
    except NoteError as exc:
        raise IntegrityError(f"{where}: {exc}") from None


def keep_copy(folder: Path, note: str, size: int, vkey: str) -> Path:
    """Write a checkpoint into the checkpoint folder as a new file (and the public key, once);
    the file's path. A file of that size already there is left as it is."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_new(folder / PUBLIC_KEY_FILE, vkey + "\n")
    path = folder / f"checkpoint-{size:012d}"
    _write_new(path, note)
    return path


def copies(folder: Path) -> list[tuple[int, Path]]:
    """(size, path) of the checkpoints in the checkpoint folder, largest first."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"the ledger's checkpoint folder {folder}: {exc}") from None
    found = [(int(m.group(1)), folder / name) for name in names if (m := _NAME.match(name))]
    return sorted(found, reverse=True)


def newest_copy(folder: Path) -> Path | None:
    """The newest checkpoint file in the checkpoint folder. An empty one is passed over: a
    process that died between making the file and writing it (``_write_new``) left it so;
    its checkpoint is the head's, kept in the store, and the next one is written."""
    for _size, path in copies(folder):
        try:
            if path.stat().st_size:
                return path
        except FileNotFoundError:
            continue
    return None


def _write_new(path: Path, text: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    except FileExistsError:
        return
    except OSError as exc:
        raise ConfigError(f"the ledger's checkpoint folder: cannot write {path}: {exc}") from None
    with os.fdopen(fd, "wb") as out:
        out.write(text.encode())
        sync_file(out)
    sync_folder(path.parent)
