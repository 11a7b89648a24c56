"""Fixtures of the web tests: the live servers (see ``live.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.workflow_double import WorkflowDouble
from web.live import LiveServer, credentials_env, serve_store


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The service with users (mia: manager, rex: reader) and tokens."""
    yield from serve_store(tmp_path_factory.mktemp("live"), credentials_env())


@pytest.fixture(scope="session")
def open_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The service with no credentials at all (the local try-out)."""
    yield from serve_store(tmp_path_factory.mktemp("open"), {})


@pytest.fixture
def sample_ids(live: LiveServer) -> list[str]:
    with live.client("reader") as client:
        answer = client.get("/api/archive/snapshots", params={"from": "2024-01-01", "limit": 100})
    assert answer.status_code == 200
    return [s["snapshot"] for s in answer.json()["snapshots"]]


@pytest.fixture(scope="module")
def double() -> Iterator[WorkflowDouble]:
    """One workflow double per module: the live servers of a module talk to it."""
    with WorkflowDouble() as running:
        yield running
