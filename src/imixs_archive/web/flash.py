"""The banners of the web pages (``?error=``, ``?notice=``): only text the app put there.

A page shows the message a form action redirected with; a link someone else made
(``/ui/monitor?error=Your archive is corrupt, call ...``) must not show its text in the
app's own banner. The redirect carries the message with a seal,
``?error=<text>&seal=<expiry>.<mac>``: the MAC an HMAC-SHA256 over the kind, the text and
the expiry, under a key made at process start. A page shows a banner only when the seal
holds and has not expired (``FLASH_SECONDS``); anything else shows no banner. The key is
the process's own: a banner does not outlive a restart, which a redirect followed at once
never notices. The text stays readable in the address (and the access log).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping
from urllib.parse import quote

FLASH_SECONDS = 300
"""How long a sealed message shows (a redirect is followed at once; a reload soon after
still shows it)."""

_KEY = secrets.token_bytes(32)


def _mac(kind: str, text: str, expires: str) -> str:
    message = "\0".join(("flash", kind, expires, text)).encode("utf-8")
    digest = hmac.new(_KEY, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest[:18]).decode("ascii")


def flash_query(kind: str, text: str, now: float | None = None) -> str:
    """``<kind>=<text>&seal=...`` for a redirect's address (``kind``: error or notice)."""
    expires = str(int((now if now is not None else time.time()) + FLASH_SECONDS))
    seal = f"{expires}.{_mac(kind, text, expires)}"
    return f"{kind}={quote(text)}&seal={quote(seal)}"


def shown(params: Mapping[str, str], kind: str, now: float | None = None) -> str:
    """The text of ``?<kind>=`` when the app sealed it and the seal is current, else ""."""
    text = params.get(kind, "")
    expires, _, mac = params.get("seal", "").partition(".")
    if not text or not expires.isdigit():
        return ""
    if int(expires) < (now if now is not None else time.time()):
        return ""
    return text if hmac.compare_digest(mac.encode(), _mac(kind, text, expires).encode()) else ""
