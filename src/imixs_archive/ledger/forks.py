"""The key never signs a fork: what it signed last is kept beside it.

C2SP tlog-checkpoint: a log must not sign a checkpoint inconsistent with one it signed
before. The store cannot be trusted to remember what was signed: an older copy of it put
back (a restore from a backup, a disk image, a snapshot of the volume) holds an older head
and an older table of checkpoints, and its log, once it grows again, is another history.
So the signer keeps its own record: the last checkpoint signed with the key in
``ledger.key`` is kept in ``ledger.key.signed`` beside it (a new file moved into place,
never a smaller size over a larger one). Before a round sequences, the store's head must
be an extension of that checkpoint (the same root at its size, read from the store's
tree); otherwise the round is refused (:class:`ForkError`, exit 5, naming both roots),
the ``fork`` book records why (every process then refuses, also one without the key), and
the sequencer stops until an operator starts a new log (``ledger new-log``,
``ledger/new_log.py``).

A replica with its own copy of the key keeps its own record: it catches a store put back
behind what it signed itself. What the other replicas signed is guarded by the witnesses
(``ledger/witnesses.py``), which refuse a checkpoint that is not an extension of the last
one they cosigned.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path

from imixs_archive.durable import sync_folder
from imixs_archive.errors import ConfigError, IntegrityError
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.checkpoints import open_checkpoint
from imixs_archive.ledger.tiles import tile_reader
from imixs_archive.tlog.merkle import range_hash
from imixs_archive.tlog.note import Checkpoint, Verifier

FORK = "fork"
"""The book that stops every sequencer of the store: why (a fork was refused)."""
NEW_LOG_STEP = "imixs-archive ledger new-log --origin NEW_ORIGIN --reason TEXT"


class ForkError(IntegrityError):
    """The store's log is not an extension of a checkpoint the ledger's key signed."""


def signed_path(key: Path) -> Path:
    """The file that keeps the last checkpoint signed with the key in ``key``."""
    return key.with_name(key.name + ".signed")


def last_signed(key: Path, verifier: Verifier) -> Checkpoint | None:
    """The last checkpoint the key in ``key`` signed, as recorded beside it; None before
    the first (or before this version). ConfigError when the record is damaged or signed
    by another key."""
    path = signed_path(key)
    try:
        note = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the ledger's record of what it signed, {path}: {exc}") from None
    try:
        return open_checkpoint(note, [verifier], str(path))
    except IntegrityError as exc:
        raise ConfigError(
            f"{exc}: the record is not of this key (was the key file replaced?)"
        ) from None


def remember_signed(key: Path, note: str, checkpoint: Checkpoint, verifier: Verifier) -> None:
    """Record ``note`` as the last checkpoint the key signed, unless the record already
    names one as large (several processes of a host share it; it never goes back)."""
    known = last_signed(key, verifier)
    if known is not None and known.size >= checkpoint.size:
        return
    path = signed_path(key)
    fd, temporary = tempfile.mkstemp(prefix=".ledger-signed-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(note)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        raise ConfigError(f"the ledger's record of what it signed, {path}: {exc}") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    sync_folder(path.parent)


def fork_from(books: LedgerBooks, signed: Checkpoint, size: int, root: bytes) -> str:
    """Why the store's log (``size`` entries, ``root``) is not an extension of ``signed``,
    naming both roots; '' when it is."""
    if size == signed.size and root == signed.root_hash:
        return ""
    if size < signed.size:
        ours = f"holds only {size} entries (root {_b64(root)})"
    else:
        try:
            prefix = range_hash(0, signed.size, tile_reader(books).node)
        except IntegrityError as exc:  # a store that cannot answer (StoreError) is no fork
            prefix = b""
            ours = f"cannot show its first {signed.size} entries ({exc})"
        if prefix == signed.root_hash:
            return ""
        if prefix:
            ours = f"has the root {_b64(prefix)} at {signed.size} entries"
    return (
        f"the ledger's key signed {signed.size} entries of {signed.origin} with the root "
        f"{_b64(signed.root_hash)}; the store's log {ours}: it is not an extension of what "
        "was signed (an older copy of the store was put back, or its log rewritten). "
        "Signing it would fork the log: nothing is signed, the ledger stops. To start a new "
        f"log from the store as it is: {NEW_LOG_STEP}"
    )


def record_fork(books: LedgerBooks, why: str, by: str, at: int) -> None:
    """Stop every sequencer of this store: the ``fork`` book says why."""
    books.head.open(FORK, json.dumps({"why": why, "by": by, "at": at}, sort_keys=True))


def refused(books: LedgerBooks) -> str:
    """Why the ledger is stopped ('' when it is not)."""
    text = books.head.text(FORK)
    if text is None:
        return ""
    try:
        return str(json.loads(text)["why"])
    except (ValueError, KeyError, TypeError):
        return f"the ledger is stopped (its fork record is damaged: {text[:200]!r})"


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")
