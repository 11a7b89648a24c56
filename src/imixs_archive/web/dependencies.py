"""What every route gets: the app's services (built once by ``create_app``) and the
caller's identity, as FastAPI dependencies."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends
from fastapi.templating import Jinja2Templates
from starlette.requests import HTTPConnection, Request

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.ledger.schedule import LedgerSchedule
from imixs_archive.services.jobs import JobRunner
from imixs_archive.services.scrub_schedule import ScrubSchedule
from imixs_archive.web.auth import Authenticator, Principal
from imixs_archive.web.credentials import Role
from imixs_archive.web.dashboard import DashboardCache, TimedCache
from imixs_archive.web.integrations import WorkflowLink
from imixs_archive.web.metrics import Metrics


@dataclass
class Services:
    settings: Settings
    archive: Archive
    """The archive over the store, metered (every call counted and timed)."""
    jobs: JobRunner
    auth: Authenticator
    metrics: Metrics
    templates: Jinja2Templates
    dashboard: DashboardCache
    started: dt.datetime
    workflow: WorkflowLink | None = None
    """The workflow client and sync loop (None without WORKFLOW_SERVICE_ENDPOINT)."""
    ledger: LedgerSchedule | None = None
    """The ledger's sequencing (``ARCHIVE_LEDGER_INTERVAL``) and what it last did."""
    scrub: ScrubSchedule | None = None
    """The scrub (``ARCHIVE_SCRUB_INTERVAL``) and its last slice here."""
    analytics: TimedCache = field(default_factory=TimedCache)
    """The Statistics page's analytics (aggregates, lead times) per range, for a minute."""


def services(conn: HTTPConnection) -> Services:
    found: Services = conn.app.state.services
    return found


def reader(request: Request) -> Principal:
    svc = services(request)
    svc.auth.check_origin(request, request.method)
    return svc.auth.require(request, Role.READER)


def manager(request: Request) -> Principal:
    svc = services(request)
    svc.auth.check_origin(request, request.method)
    return svc.auth.require(request, Role.MANAGER)


def auditor(request: Request) -> Principal:
    """Whoever may read the ledger's log and its proofs: an auditor, reader or manager."""
    svc = services(request)
    svc.auth.check_origin(request, request.method)
    return svc.auth.require(request, Role.AUDITOR)


def log_reader(request: Request) -> Principal | None:
    """Whoever may read the log served as tiles (``/ledger/``): as :func:`auditor`, or
    anyone (None) with ``ARCHIVE_LEDGER_PUBLIC``: static resources, no request of them
    makes the service sequence or sign (a proof of the API may)."""
    if services(request).settings.ledger_public:
        services(request).auth.check_origin(request, request.method)
        return None
    return auditor(request)


Svc = Annotated[Services, Depends(services)]
Reader = Annotated[Principal, Depends(reader)]
Manager = Annotated[Principal, Depends(manager)]
Auditor = Annotated[Principal, Depends(auditor)]
LogReader = Annotated[Principal | None, Depends(log_reader)]
