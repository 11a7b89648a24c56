"""Credentials from configuration: hashed passwords, hashed API tokens, roles.

``ARCHIVE_USERS`` is ``name:role:hash;...``; a hash is
``pbkdf2_sha256$<iterations>$<salt, base64>$<key, base64>`` (``hash_password`` makes one).
``ARCHIVE_API_TOKENS`` is ``name:role:<sha256 hex of the token>;...``: tokens are random
and long, so one SHA-256 is enough, and the configuration never holds a usable secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from enum import StrEnum

from imixs_archive.config import Settings
from imixs_archive.errors import ConfigError

SCHEME = "pbkdf2_sha256"
ITERATIONS = 600_000
"""PBKDF2-HMAC-SHA256 rounds for new hashes (OWASP's figure for this hash)."""


class Role(StrEnum):
    READER = "reader"
    MANAGER = "manager"
    AUDITOR = "auditor"
    """Reads the ledger's log (``/ledger/``, the proofs), none of the archived data."""


def grants(role: Role, needed: Role) -> bool:
    """A manager may do everything a reader may, a reader everything an auditor may."""
    if role is Role.MANAGER:
        return True
    return needed is Role.AUDITOR or (needed is Role.READER and role is Role.READER)


@dataclass(frozen=True)
class User:
    name: str
    role: Role
    password_hash: str


@dataclass(frozen=True)
class Token:
    name: str
    role: Role
    sha256: str


def hash_password(password: str, *, iterations: int = ITERATIONS) -> str:
    salt = secrets.token_bytes(16)
    key = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)
    return f"{SCHEME}${iterations}${_b64(salt)}${_b64(key)}"


def verify_password(password: str, encoded: str) -> bool:
    try:
        scheme, rounds, salt, key = encoded.split("$")
        if scheme != SCHEME:
            return False
        expected = base64.b64decode(key)
        actual = hashlib.pbkdf2_hmac(
            "sha256", password.encode("utf-8"), base64.b64decode(salt), int(rounds)
        )
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def new_token() -> tuple[str, str]:
    """A fresh API token and the SHA-256 hex to configure for it."""
    token = secrets.token_urlsafe(32)
    return token, token_hash(token)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _role(text: str, where: str) -> Role:
    try:
        return Role(text.strip().lower())
    except ValueError:
        raise ConfigError(
            f"{where}: role must be reader, auditor or manager, not {text!r}"
        ) from None


_EXAMPLES = {
    "ARCHIVE_USERS": f"ann:manager:{SCHEME}$600000$...;bob:reader:{SCHEME}$... "
    "(hashes from `imixs-archive hash-password`)",
    "ARCHIVE_API_TOKENS": "ci:reader:<64 hex digits>;ops:manager:<64 hex digits> "
    "(from `imixs-archive hash-password --token`)",
}


def _entries(text: str, setting: str) -> list[tuple[str, Role, str]]:
    found: list[tuple[str, Role, str]] = []
    for number, entry in enumerate(filter(None, (e.strip() for e in text.split(";"))), 1):
        parts = entry.split(":")
        if len(parts) != 3 or not parts[0].strip() or not parts[2].strip():
            several = len(parts) > 3 or "," in entry
            separator = " (entries are separated by ';')" if several else ""
            raise ConfigError(
                f"{setting}: entry {number} is not name:role:hash{separator}: expected "
                f"name:role:hash;name:role:hash, e.g. {_EXAMPLES[setting]}"
            )
        name, role, secret = (part.strip() for part in parts)
        found.append((name, _role(role, f"{setting} entry {number}"), secret))
    return found


def parse_users(text: str) -> dict[str, User]:
    users: dict[str, User] = {}
    for name, role, encoded in _entries(text, "ARCHIVE_USERS"):
        if not encoded.startswith(SCHEME + "$") or encoded.count("$") != 3:
            raise ConfigError(
                f"ARCHIVE_USERS: the hash of {name!r} is not a {SCHEME} hash "
                "(make one with `imixs-archive hash-password`)"
            )
        users[name] = User(name, role, encoded)
    return users


def parse_tokens(text: str) -> dict[str, Token]:
    """Tokens by their SHA-256 hex."""
    tokens: dict[str, Token] = {}
    for name, role, digest in _entries(text, "ARCHIVE_API_TOKENS"):
        digest = digest.lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ConfigError(
                f"ARCHIVE_API_TOKENS: the hash of {name!r} is not a SHA-256 hex digest "
                "(make one with `imixs-archive hash-password --token`)"
            )
        tokens[digest] = Token(name, role, digest)
    return tokens


def has_credentials(settings: Settings) -> bool:
    """True when any way to log in is configured (users, tokens or OIDC)."""
    return bool(
        settings.users.strip() or settings.api_tokens.strip() or settings.oidc_issuer.strip()
    )


def is_loopback(host: str) -> bool:
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings) -> None:
    """Refuse to serve on a non-loopback address when nobody would need to log in."""
    if is_loopback(settings.http_host) or has_credentials(settings):
        return
    raise ConfigError(
        f"refusing to listen on {settings.http_host} without credentials: anyone who can "
        "reach it could delete snapshots. Configure ARCHIVE_USERS and/or ARCHIVE_API_TOKENS "
        "(hashes from `imixs-archive hash-password`) or ARCHIVE_OIDC_ISSUER, or listen on "
        "127.0.0.1 for a local try-out."
    )
