"""Sync and restore as the web app sees them.

The sync loop (``services/sync.py``), resync and restore (``services/restore.py``) are
built separately and are NOT wired into the web app yet. Until they are, every endpoint
that would run them answers 503 with a message saying why (not configured, or not
available in this version); the status endpoints report what the store itself knows (the
``sync.*`` and ``restore.*`` items of the state document, written by this or the Java
service) and say plainly that nothing runs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, NoReturn

from imixs_archive.archive.state import load_state
from imixs_archive.errors import ConfigError
from imixs_archive.web.state import Services

SYNC_ITEMS = ("sync.point", "sync.count", "sync.size")
RESTORE_ITEMS = (
    "restore.from",
    "restore.to",
    "restore.point",
    "restore.count",
    "restore.size",
    "restore.errors",
)


def workflow_endpoint(svc: Services) -> str:
    """WORKFLOW_SERVICE_ENDPOINT, once the settings registry has it ('' until then)."""
    return str(getattr(svc.settings, "workflow_service_endpoint", "") or "").strip()


def _unavailable(feature: str, svc: Services) -> NoReturn:
    if not workflow_endpoint(svc):
        raise ConfigError(f"{feature} is not configured: set WORKFLOW_SERVICE_ENDPOINT")
    raise ConfigError(
        f"{feature} is configured ({workflow_endpoint(svc)}) but not available in this "
        "version of the web service: it does not run it yet"
    )


def require_sync(svc: Services) -> NoReturn:
    _unavailable("sync", svc)


def require_restore(svc: Services) -> NoReturn:
    _unavailable("restore", svc)


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="milliseconds")
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def sync_overview(svc: Services) -> dict[str, Any]:
    state = load_state(svc.backend)
    items = {name: _plain(state.get_first(name)) for name in SYNC_ITEMS}
    point = state.get_first("sync.point")
    lag = None
    if isinstance(point, int) and point > 0:
        lag = round(dt.datetime.now(dt.UTC).timestamp() - point / 1000, 3)
    endpoint = workflow_endpoint(svc)
    return {
        "configured": bool(endpoint),
        "running": False,
        "endpoint": endpoint or None,
        "message": (
            "sync is not configured: set WORKFLOW_SERVICE_ENDPOINT"
            if not endpoint
            else "sync is configured but not run by this version of the web service"
        ),
        "state": items,
        "lag_seconds": lag,
        "dead_letters": None,
    }


def restore_overview(svc: Services) -> dict[str, Any]:
    state = load_state(svc.backend)
    endpoint = workflow_endpoint(svc)
    return {
        "configured": bool(endpoint),
        "running": False,
        "message": (
            "restore is not configured: set WORKFLOW_SERVICE_ENDPOINT"
            if not endpoint
            else "restore is configured but not run by this version of the web service"
        ),
        "state": {name: _plain(state.get_first(name)) for name in RESTORE_ITEMS},
    }
