"""The web app factory: REST API, web UI, health and metrics over one store.

``create_app(settings, backend)`` builds everything (no globals at import). The caller
owns the backend; the app owns its job runner, which it shuts down with itself.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from starlette.types import Message, Receive, Scope, Send

from imixs_archive import __version__
from imixs_archive.config import Settings
from imixs_archive.humanize import human_age, human_bytes, human_duration
from imixs_archive.ledger.schedule import LedgerSchedule
from imixs_archive.periodic import Background, Lifecycle
from imixs_archive.runtime import build_archive
from imixs_archive.services.figures_schedule import FiguresSchedule
from imixs_archive.services.gc_schedule import GcSchedule
from imixs_archive.services.jobs import JobRunner
from imixs_archive.services.retention import retention_loop
from imixs_archive.services.scrub_schedule import ScrubSchedule
from imixs_archive.storage.base import Backend
from imixs_archive.timezones import from_epoch_ms, zone, zone_label
from imixs_archive.web import (
    api_analytics,
    api_archive,
    api_jobs,
    api_ledger,
    api_restore,
    api_tiles,
    health,
    java_form,
    ui,
    ui_actions,
    ui_holds,
    ui_process_map,
    ui_stats,
)
from imixs_archive.web.auth import Authenticator, TokenVerifier
from imixs_archive.web.dashboard import DashboardCache
from imixs_archive.web.dependencies import Services
from imixs_archive.web.http_middleware import HttpMiddleware
from imixs_archive.web.integrations import WorkflowLink
from imixs_archive.web.limits import RequestBudget
from imixs_archive.web.metrics import MeteredBackend, Metrics, RequestMetrics
from imixs_archive.web.oidc import oidc_verifier
from imixs_archive.web.problems import CutShort, install_problem_handlers

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
PAGE_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def create_app(
    settings: Settings,
    backend: Backend,
    *,
    oidc: TokenVerifier | None = None,
    jobs: JobRunner | None = None,
    run_sync: bool = True,
) -> FastAPI:
    """The ASGI app over ``backend``. ``oidc`` replaces the verifier built from the
    settings (tests); ``jobs`` a runner of the caller's. With a workflow endpoint set, the
    sync loop runs while the app does (unless ``run_sync`` is false)."""
    metrics = Metrics()
    archive = build_archive(backend, settings, wrap=lambda store: MeteredBackend(store, metrics))
    collector = GcSchedule(archive.files, settings)
    ledger = LedgerSchedule(archive, settings)
    scrub = ScrubSchedule(archive, settings)
    runner = jobs or JobRunner()
    verifier = oidc if oidc is not None else oidc_verifier(settings)
    svc = Services(
        settings=settings,
        archive=archive,
        jobs=runner,
        auth=Authenticator(settings, verifier),
        metrics=metrics,
        templates=_templates(zone(settings.timezone)),
        dashboard=DashboardCache(archive, tz=zone(settings.timezone)),
        started=dt.datetime.now(dt.UTC),
        ledger=ledger,
        scrub=scrub,
    )
    if settings.workflow_service_endpoint.strip():
        svc.workflow = WorkflowLink(settings, archive)
    metrics.add_gauges(lambda: health.scrape_gauges(svc))
    metrics.add_java_counters(lambda: health.java_counters(svc))
    retention = retention_loop(settings, archive)

    def warm() -> None:
        ui_stats.warm(svc)
        ui_process_map.warm(svc)

    figures = FiguresSchedule(archive, settings, warm)

    # Closed the other way round: the jobs before the ledger (what they changed is
    # logged), the workflow link last (the sync's last events are released).
    background = Lifecycle(
        [
            *(
                []
                if svc.workflow is None
                else [svc.workflow if run_sync else _Closed(svc.workflow)]
            ),
            ledger,
            _JobsAtClose(runner),
            figures,
            collector,
            scrub,
            *([retention] if retention is not None else []),
        ]
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        background.start()
        yield
        background.close()

    app = FastAPI(
        title="imixs-archive",
        version=__version__,
        description="Archive of Imixs-Workflow snapshots: the Java service's API and more.",
        openapi_url="/api/openapi.json",
        docs_url=None,  # FastAPI's docs pages load their assets from a CDN: ours do not
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.services = svc
    app.state.gc = collector
    install_problem_handlers(app)
    routers = (
        api_archive,
        api_jobs,
        api_restore,
        api_analytics,
        api_ledger,
        api_tiles,
        health,
        ui,
        ui_stats,
        ui_process_map,
        ui_actions,
        ui_holds,
        java_form,
    )
    for module in routers:
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RequestMetrics, metrics=metrics)
    app.add_middleware(RequestBudget, seconds=settings.request_timeout or None)
    app.add_middleware(CutShort)
    return app


def _templates(tz: dt.tzinfo) -> Jinja2Templates:
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.globals["version"] = __version__
    templates.env.filters["brief"] = _brief
    templates.env.filters["labelled"] = labelled
    templates.env.filters["local"] = functools.partial(local_time, tz=tz)
    templates.env.filters["local_dates"] = functools.partial(local_dates, tz=tz)
    templates.env.filters["inline_code"] = inline_code
    templates.env.filters["human_bytes"] = human_bytes
    templates.env.filters["human_duration"] = human_duration
    templates.env.filters["human_age"] = human_age
    return templates


SHOWN_AS_TABLES = frozenset({"planned", "back", "not_yet", "request", "token"})
"""A job's result fields the pages show as tables of their own (plans), or not at all."""


def _brief(status: dict[str, Any]) -> dict[str, Any]:
    """A job's progress and result without the long lists shown as tables (a plan)."""
    return {key: value for key, value in status.items() if key not in SHOWN_AS_TABLES}


def labelled(status: dict[str, Any]) -> list[tuple[str, str]]:
    """A job's figures as (label, text) rows: ``bytes_written`` -> "Bytes written"."""
    rows = status.items()
    return [(key.replace("_", " ").capitalize(), _text(key, value)) for key, value in rows]


def _text(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and "bytes" in key:
        return human_bytes(value)
    if isinstance(value, list):
        return ", ".join(map(str, value)) if value else "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_text(str(k), v)}" for k, v in value.items()) or "none"
    return str(value)


_CODE = re.compile(r"``(.+?)``|`([^`]+)`")


def inline_code(text: str | None) -> Markup:
    """A docstring's ``code`` (reStructuredText) or `code` (Markdown) as <code>, the rest
    escaped."""
    escaped = str(escape(text or ""))
    return Markup(_CODE.sub(lambda m: f"<code>{m[1] or m[2]}</code>", escaped))


def local_time(value: Any, tz: dt.tzinfo) -> str:
    """An instant as the pages show it: date and time in the service's time zone
    (``ARCHIVE_TIMEZONE``), the zone named. Takes an aware datetime, an ISO text with an
    offset, or epoch milliseconds (as the Java state items keep instants)."""
    when: dt.datetime
    if isinstance(value, dt.datetime):
        when = value
    elif isinstance(value, int) and not isinstance(value, bool):
        when = from_epoch_ms(value)
    elif isinstance(value, str) and value:
        try:
            when = dt.datetime.fromisoformat(value)
        except ValueError:
            return value
    else:
        return "–" if value is None or value == "" else str(value)
    when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    return f"{when.astimezone(tz).strftime('%Y-%m-%d %H:%M:%S')} {zone_label(tz)}"


def local_dates(value: Any, tz: dt.tzinfo) -> Any:
    """A datetime as :func:`local_time` shows it; any other value unchanged."""
    return local_time(value, tz) if isinstance(value, dt.datetime) else value


class SecurityHeaders(HttpMiddleware):
    """Headers every answer carries; HTML pages also get a strict CSP (no inline script)."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def add_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                extra = {
                    b"x-content-type-options": b"nosniff",
                    b"x-frame-options": b"DENY",
                    b"referrer-policy": b"same-origin",
                }
                content_type = dict(headers).get(b"content-type", b"")
                if content_type.startswith(b"text/html"):
                    extra[b"content-security-policy"] = PAGE_POLICY.encode()
                headers += [(k, v) for k, v in extra.items() if k not in names]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, add_headers)


class _JobsAtClose:
    """The jobs asked of the API, given ten seconds to end when ``serve`` stops."""

    def __init__(self, runner: JobRunner) -> None:
        self.runner = runner

    def start(self) -> None:
        pass  # jobs start when asked

    def close(self) -> None:
        left = self.runner.shutdown(timeout=10)
        if left:
            log.warning("jobs still running at shutdown: %s", ", ".join(left))


class _Closed:
    """A part that is not started here, only closed with the rest (the workflow link of
    an app that runs no sync loop: its client)."""

    def __init__(self, part: Background) -> None:
        self.part = part

    def start(self) -> None:
        pass

    def close(self) -> None:
        self.part.close()
