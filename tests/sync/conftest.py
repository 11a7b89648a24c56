"""Fixtures of the sync's tests: the workflow double (a module names its ``SEED``), and the
services a test opened (``support.sync_harness.open_service``) closed when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.sync_harness import close_services
from support.workflow_double import WorkflowDouble


@pytest.fixture
def double(request: pytest.FixtureRequest) -> Iterator[WorkflowDouble]:
    seed = {"seed": request.module.SEED} if hasattr(request.module, "SEED") else {}
    with WorkflowDouble(**seed) as running:
        yield running


@pytest.fixture(autouse=True)
def _close_services() -> Iterator[None]:
    yield
    close_services()
