"""Failed logins per user name: after a few in a row, that name's password is not even
checked for a while (each check is a deliberately slow PBKDF2, so guessing is also a way
to load the server). The lock is short and grows while the failures go on: 30 s, doubling
up to 5 minutes; a correct password clears it. Kept per user name, not per client address
(behind a reverse proxy every client has the proxy's address); at most ``MAX_NAMES`` names
are remembered, the least recently failed forgotten first.

Attempts are counted before the password is hashed (``begin``): of the attempts for one
name in flight at once, only as many are checked as failures are still free (one once a
lock has run out); the others get 429 at once, so concurrent guesses cannot race past the
lock and cost no hashing."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

FREE_FAILURES = 5
"""Failures in a row before a name is locked."""
FIRST_LOCK = 30.0
LONGEST_LOCK = 300.0
MAX_NAMES = 10_000
BUSY_WAIT = 1.0
"""Retry-After for an attempt refused because as many for that name are being checked."""


@dataclass
class _Record:
    failures: int = 0
    locked_until: float = 0.0
    checking: int = 0


class LoginThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, name: str) -> float:
        """Seconds until this name's password may be checked again (0: now)."""
        with self._lock:
            record = self._records.get(name)
            if record is None:
                return 0.0
            return max(0.0, record.locked_until - self._clock())

    def begin(self, name: str) -> float:
        """Reserve a password check for ``name``: 0 when it may go ahead (then ``failed``
        or ``succeeded`` must follow), else the seconds to wait."""
        with self._lock:
            record = self._records.get(name)
            if record is None:
                record = self._records[name] = _Record()
                self._forget_oldest()
            wait = record.locked_until - self._clock()
            if wait > 0:
                return wait
            if record.checking >= max(1, FREE_FAILURES - record.failures):
                return BUSY_WAIT
            record.checking += 1
            return 0.0

    def failed(self, name: str) -> None:
        with self._lock:
            record = self._records.pop(name, None) or _Record()
            record.checking = max(0, record.checking - 1)
            record.failures += 1
            over = record.failures - FREE_FAILURES
            if over >= 0:
                lock = min(FIRST_LOCK * 2**over, LONGEST_LOCK)
                record.locked_until = self._clock() + lock
            self._records[name] = record
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        while len(self._records) > MAX_NAMES:
            self._records.popitem(last=False)

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._records.pop(name, None)
