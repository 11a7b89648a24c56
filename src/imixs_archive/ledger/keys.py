"""The ledger's signing key: an Ed25519 key in a file, as a C2SP signer key (``tlog.note``).

The file holds one line, ``PRIVATE+KEY+<name>+<hash>+<key>``, readable by its owner only.
It is created when the ledger starts and there is none, with a message saying where it is
and that it must be backed up (whoever holds it can sign checkpoints; without it no new
checkpoint can be signed by this key). Its public half (``Signer.vkey``) is what an
auditor is given, and what ``imixs-archive ledger key`` prints.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from imixs_archive.config import Settings
from imixs_archive.durable import sync_folder
from imixs_archive.errors import ConfigError
from imixs_archive.tlog.note import NoteError, Signer, Verifier, generate_signer

log = logging.getLogger(__name__)


def key_path(settings: Settings) -> Path:
    """Where the signing key is (``ARCHIVE_LEDGER_KEY``, else ``ledger.key`` in the data
    folder)."""
    return Path(settings.ledger_key) if settings.ledger_key else settings.data_dir / "ledger.key"


_HOST = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+(?::[0-9]+)?"
)
MADE_UP = "imixs-archive.invalid"
"""The host of an origin made up when none was configured (RFC 2606: it names nothing)."""


def check_origin(origin: str, what: str = "ARCHIVE_LEDGER_ORIGIN") -> str:
    """``origin`` when it is a schema-less URL (C2SP tlog-checkpoint: a host name with a
    dot, then an optional path, e.g. ``archive.example.com/invoices``: witnesses tell logs
    apart by it, so a bare ``vm`` or ``localhost`` would collide); ConfigError otherwise."""
    origin = origin.strip()
    host = origin.split("/", 1)[0]
    if "://" in origin or any(c.isspace() for c in origin) or "+" in origin:
        problem = "no scheme (https://), no spaces and no '+' (it names the key too)"
    elif not _HOST.fullmatch(host):
        problem = "it must begin with a host name that has a dot"
    else:
        return origin
    raise ConfigError(
        f"{what} {origin!r} is not a schema-less URL ({problem}): name the log after the "
        "archive's public address, e.g. archive.example.com/invoices"
    )


def configured_origin(settings: Settings) -> str:
    """The origin the settings name: ``ARCHIVE_LEDGER_ORIGIN``, else the host and path of
    ``ARCHIVE_PUBLIC_URL``; '' when neither is set."""
    if settings.ledger_origin.strip():
        return check_origin(settings.ledger_origin)
    if settings.public_url.strip():
        parts = urlsplit(settings.public_url.strip())
        if not parts.scheme or not parts.netloc:
            raise ConfigError(
                f"ARCHIVE_PUBLIC_URL {settings.public_url!r} is not a URL (https://host/path)"
            )
        derived = parts.netloc.split("@")[-1] + parts.path.rstrip("/")
        return check_origin(derived, f"the origin {derived!r} of ARCHIVE_PUBLIC_URL:")
    return ""


def origin_of(settings: Settings) -> str:
    """The origin a new ledger takes (:func:`configured_origin`); also the name of its key.
    With none configured, a made-up one that names no other log
    (``imixs-archive.invalid/<host>/<random>``), with a warning: ``ledger init`` asks for
    one instead."""
    origin = configured_origin(settings)
    if origin:
        return origin
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"
    origin = f"{MADE_UP}/{host}/{secrets.token_hex(4)}"
    log.warning(
        "the ledger starts with the made-up origin %s: neither ARCHIVE_LEDGER_ORIGIN nor "
        "ARCHIVE_PUBLIC_URL is set (witnesses and auditors know a log by its origin; it "
        "stays, unless imixs-archive ledger new-log starts a new log)",
        origin,
    )
    return origin


def load_signer(path: Path) -> Signer | None:
    """The key in ``path``; None when there is no such file. ConfigError when it is not a
    signer key."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the ledger key {path} cannot be read: {exc}") from None
    try:
        return Signer.from_skey(text)
    except NoteError as exc:
        raise ConfigError(f"the ledger key {path} is not a signer key: {exc}") from None


def create_signer(path: Path, name: str) -> Signer:
    """A new key named ``name``, written to ``path`` (owner-readable only) unless another
    process made one there first (that one is returned)."""
    signer = generate_signer(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written whole under a name of its own, then linked into place: a process that finds
    # the file reads a whole key, and of processes creating one at once the first wins.
    fd, temporary = tempfile.mkstemp(prefix=".ledger-key-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(signer.skey() + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.link(temporary, path)
    except FileExistsError:
        existing = load_signer(path)
        if existing is None:
            raise ConfigError(f"the ledger key {path} vanished while it was created") from None
        return existing
    finally:
        os.unlink(temporary)
    sync_folder(path.parent)
    log.warning(
        "created the ledger's signing key in %s: back it up now and keep it secret (it "
        "signs the checkpoints that prove the archive unaltered); public key: %s",
        path,
        signer.vkey(),
    )
    return signer


def read_verifier(text: str) -> Verifier:
    """A public key given as text, or as a file holding it (``--key``)."""
    candidate = text.strip()
    if "+" not in candidate or os.path.exists(candidate):
        try:
            candidate = Path(candidate).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"public key {text!r}: {exc}") from None
    if candidate.startswith("PRIVATE+KEY+"):
        try:
            return Signer.from_skey(candidate).verifier()
        except NoteError as exc:
            raise ConfigError(f"key {text!r}: {exc}") from None
    try:
        return Verifier.from_vkey(candidate)
    except NoteError as exc:
        raise ConfigError(f"public key {text!r}: {exc}") from None
