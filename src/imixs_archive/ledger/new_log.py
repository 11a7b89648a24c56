"""``ledger new-log``: the one explicit step that starts a new log, under a new origin.

After the key refused to sign a fork (``forks.py``: an older copy of the store was put
back and grew), the store's log can no longer be signed under its origin: what the key
signed before, and what witnesses cosigned, says otherwise. When putting the copy back
was really what was wanted, an operator starts a new log, named by a new origin, that
begins with the store's log as it is: its first checkpoint signs every entry the store
holds. It is a new log, not a continuation: witnesses know it by its new origin (they
must be told it and its key), and auditors keep checking the old checkpoints with the old
key.

The step, in an order a rerun completes (it is idempotent):

1. the key file is retired beside itself (``ledger.key.<time>.retired``, with the record
   of what it signed), and a new key named after the new origin is made in its place (a
   rerun finds it and keeps it); every process that signs needs the new file;
2. the ``new-logs`` book records the step (when, who, why, the old origin, key, size and
   root and the refusal that led to it), the log's warning says it too;
3. the head is turned to the new origin and key, without a checkpoint; the ``fork`` book
   that stopped the ledger is dropped;
4. the new log's first checkpoint is signed.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from dataclasses import dataclass, replace

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import ConfigError, NotFoundError
from imixs_archive.jsonable import Jsonable
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.forks import FORK, refused, signed_path
from imixs_archive.ledger.keys import check_origin, create_signer, key_path, load_signer
from imixs_archive.ledger.schedule import sign_now
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tree import TREE, TreeState
from imixs_archive.runtime import process_actor
from imixs_archive.services.jobs import JobBusyError
from imixs_archive.timezones import now_ms
from imixs_archive.tlog.note import Signer

log = logging.getLogger(__name__)

NEW_LOGS = "new-logs"
"""The book of the logs started by ``ledger new-log``: a JSON list, oldest first."""


@dataclass
class NewLog(Jsonable):
    origin: str
    public_key: str
    previous_origin: str
    previous_size: int
    checkpoint: str


def start_new_log(archive: Archive, settings: Settings, origin: str, reason: str) -> NewLog:
    """Start a new log named ``origin`` from the store's log as it is (module's text)."""
    origin = check_origin(origin, "--origin")
    if not reason.strip():
        raise ConfigError("--reason: say why a new log is started (it is recorded)")
    books = archive.ledger
    with Sequencer(archive, settings) as sequencer:
        holder = sequencer.lease()
        if holder:
            raise JobBusyError(f"{holder} sequences the ledger: stop it first, then try again")
        text = books.head.text(TREE)
        if text is None:
            raise NotFoundError("the ledger has not started: `ledger init --origin` starts it")
        state = TreeState.decode(text)
        if state.origin == origin and not _ours(settings, state):
            raise ConfigError(f"the ledger's origin is {origin} already; name a new one")
        signer = _new_key(settings, state, origin)
        if state.origin != origin:
            _record(books, state, origin, signer, reason)
            turned = replace(
                state, origin=origin, key=signer.vkey(), checkpoint="", checkpoint_size=0
            )
            turned = replace(turned, checkpoint_at=0)
            if not books.head.turn(TREE, text, turned.encode()):
                raise JobBusyError("the ledger's head moved meanwhile: try again")
        books.head.drop(FORK)
        sequencer.release()
    with Sequencer(archive, settings) as fresh:
        note, _notes = sign_now(fresh)
    step = _step(books, origin) or {}  # a rerun: the head was turned already
    size = step.get("previous_size", state.size)
    previous = str(step.get("previous_origin", state.origin))
    return NewLog(origin, signer.vkey(), previous, size if isinstance(size, int) else 0, note)


def _step(books: LedgerBooks, origin: str) -> dict[str, object] | None:
    """The recorded step that started the log ``origin``."""
    text = books.head.text(NEW_LOGS)
    steps: list[dict[str, object]] = json.loads(text) if text else []
    return next((s for s in steps if s.get("origin") == origin), None)


def _ours(settings: Settings, state: TreeState) -> bool:
    """Whether the head already names the key file's key (a rerun of a step that died
    after turning the head): the rest is done again."""
    signer = load_signer(key_path(settings))
    return signer is not None and signer.vkey() == state.key and not state.checkpoint


def _new_key(settings: Settings, state: TreeState, origin: str) -> Signer:
    """The new log's key: the key file's when a rerun made it already, else a new one,
    the old file (and its record of what it signed) retired beside it."""
    path = key_path(settings)
    current = load_signer(path)
    if current is not None and current.name == origin:
        return current
    if current is not None:
        suffix = f".{now_ms()}.retired"
        for old in (signed_path(path), path):
            if old.exists():
                os.replace(old, old.with_name(old.name + suffix))
        log.warning("ledger: the key of %s retired to %s%s", state.origin, path, suffix)
    return create_signer(path, origin)


def _record(books: LedgerBooks, state: TreeState, origin: str, signer: Signer, why: str) -> None:
    """Add the step to the ``new-logs`` book (once) and say it in the log."""
    step = {
        "at": now_ms(),
        "by": process_actor(),
        "reason": why.strip(),
        "origin": origin,
        "key": signer.vkey(),
        "previous_origin": state.origin,
        "previous_key": state.key,
        "previous_size": state.size,
        "previous_root": base64.b64encode(state.root).decode("ascii"),
        "previous_checkpoint": state.checkpoint,
        "refused": refused(books),
    }
    for _attempt in range(20):
        if _step(books, origin) is not None:
            break
        text = books.head.text(NEW_LOGS)
        steps = json.loads(text) if text else []
        updated = json.dumps([*steps, step], sort_keys=True)
        if text is None:
            if books.head.open(NEW_LOGS, updated) is None:
                break
        elif books.head.turn(NEW_LOGS, text, updated):
            break
    log.warning(
        "ledger: a new log %s (key %s) starts from the %d entries of %s, by %s: %s",
        origin,
        signer.vkey(),
        state.size,
        state.origin,
        step["by"],
        step["reason"],
    )
