"""The ``double`` fixture: a fresh Imixs-Workflow test double on loopback for each test.
Modules that need another authentication method or seed define their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.workflow_double import WorkflowDouble


@pytest.fixture
def double() -> Iterator[WorkflowDouble]:
    with WorkflowDouble() as running:
        yield running
