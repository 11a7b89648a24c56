"""What ``serve`` exposes at /metrics when everything it can report on runs: the sync (over
the workflow double), the FTPS backup of events (over the test FTPS server), a verify, a
backup and a ledger verify job, the ledger's checkpoints, the embedded store. The deploy
files (alerting rules, dashboard) may name only these metrics."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.ftps_server import serve
from support.metric_names import families
from support.workflow_double import WorkflowDouble
from web.live import serve_store


@pytest.fixture(scope="session")
def exposed(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The families ``serve`` exposes with every reporting part running."""
    tmp = tmp_path_factory.mktemp("exposed")
    with WorkflowDouble() as double, contextmanager(serve)(tmp) as ftps:
        double.save(subject="one")
        env = {
            "WORKFLOW_SERVICE_ENDPOINT": double.url,
            "WORKFLOW_SYNC_INITIALDELAY": "0",
            "WORKFLOW_SYNC_INTERVAL": "100",
            **ftps.env(),
            "ARCHIVE_USERS": "",
        }
        with contextmanager(_serving)(tmp, env) as text:
            return families(text)


def _serving(tmp: Path, env: dict[str, str]) -> Iterator[str]:
    for live in serve_store(tmp, env):
        with live.client() as client:
            for job in ("verify", "backup", "ledger/verify"):
                assert client.post(f"/api/{job}", json={}).status_code == 202
            assert client.get("/api/stats/dashboard").status_code == 200  # the totals
            deadline = time.monotonic() + 60
            text = ""
            while time.monotonic() < deadline:
                text = client.get("/metrics").text
                wanted = (
                    "sync_pending_events",
                    "backup_round_failures",
                    "verify_problems",
                    "ledger_verify_problems",
                    "ledger_checkpoint_seconds",
                )
                if all(f"imixs_archive_{name}" in text for name in wanted):
                    break
                time.sleep(0.1)
            yield text
