"""The web app factory: REST API, web UI, health and metrics over one store.

``create_app(settings, backend)`` builds everything (no globals at import). The caller
owns the backend; the app owns its job runner, which it shuts down with itself.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from imixs_archive import __version__
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.services.jobs import JobRunner
from imixs_archive.services.retention import retention_loop
from imixs_archive.storage.base import Backend
from imixs_archive.web import (
    api_analytics,
    api_archive,
    api_jobs,
    api_restore,
    health,
    ui,
    ui_actions,
    ui_stats,
)
from imixs_archive.web.auth import Authenticator, TokenVerifier
from imixs_archive.web.dashboard import DashboardCache
from imixs_archive.web.integrations import WorkflowLink
from imixs_archive.web.metrics import MeteredBackend, Metrics, RequestMetrics
from imixs_archive.web.oidc import oidc_verifier
from imixs_archive.web.problems import install_problem_handlers
from imixs_archive.web.state import Services

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
    metered = MeteredBackend(backend, metrics)
    archive = Archive(metered)
    runner = jobs or JobRunner()
    verifier = oidc if oidc is not None else oidc_verifier(settings)
    svc = Services(
        settings=settings,
        backend=metered,
        archive=archive,
        jobs=runner,
        auth=Authenticator(settings, verifier),
        metrics=metrics,
        templates=_templates(),
        dashboard=DashboardCache(archive),
        started=dt.datetime.now(dt.UTC),
    )
    if settings.workflow_service_endpoint.strip():
        svc.workflow = WorkflowLink(settings, archive)
    metrics.add_gauges(lambda: health.scrape_gauges(svc))
    retention = retention_loop(settings, archive, log)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if svc.workflow is not None and run_sync:
            svc.workflow.start()
        if retention is not None:
            retention.start()
        yield
        if retention is not None:
            retention.close()
        left = runner.shutdown(timeout=10)
        if left:
            log.warning("jobs still running at shutdown: %s", ", ".join(left))
        if svc.workflow is not None:
            svc.workflow.close()

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
    install_problem_handlers(app)
    routers = (api_archive, api_jobs, api_restore, api_analytics, health, ui, ui_stats, ui_actions)
    for module in routers:
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RequestMetrics, metrics=metrics)
    return app


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.globals["version"] = __version__
    templates.env.filters["brief"] = _brief
    return templates


def _brief(status: dict[str, Any]) -> dict[str, Any]:
    """A job's progress and result without the long lists shown as tables (a plan)."""
    return {key: value for key, value in status.items() if key != "planned"}


class SecurityHeaders:
    """Headers every answer carries; HTML pages also get a strict CSP (no inline script)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

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
