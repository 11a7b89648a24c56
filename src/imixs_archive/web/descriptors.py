"""This process's file descriptors: how many are open, how many it may open.

``serve`` keeps half of them for its HTTP connections (``web/connections.py``), and
``/readyz`` names the count when the store's file cannot be opened."""

from __future__ import annotations

import errno
import os
import resource

MAX_AUTOMATIC_CONNECTIONS = 10_000


def descriptor_limit() -> int | None:
    """The soft limit on open files (RLIMIT_NOFILE); None when there is none."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def open_descriptors() -> int | None:
    """Descriptors open now (Linux's /proc); None where that cannot be counted (no
    /proc); the limit when none is left to list the folder with."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # less the listing's own
    except OSError as exc:
        return descriptor_limit() if exc.errno == errno.EMFILE else None


def descriptors_in_use() -> str:
    """``"1021 of 1024 file descriptors open"``, as far as it can be told."""
    count, limit = open_descriptors(), descriptor_limit()
    used = "?" if count is None else str(count)
    return f"{used} of {'unlimited' if limit is None else limit} file descriptors open"


def connection_limit(configured: int) -> int:
    """The open HTTP connections to keep at most: ``configured`` (ARCHIVE_HTTP_MAX_CONNECTIONS),
    or when it is 0 half of the open-file limit, at most ``MAX_AUTOMATIC_CONNECTIONS``."""
    if configured > 0:
        return configured
    limit = descriptor_limit()
    if limit is None:
        return MAX_AUTOMATIC_CONNECTIONS
    return max(1, min(MAX_AUTOMATIC_CONNECTIONS, limit // 2))
