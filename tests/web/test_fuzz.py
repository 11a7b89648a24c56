"""Generated API calls over a real socket (schemathesis over the OpenAPI description):
whatever a client sends, the answer is never a server error. Bounded: FUZZ_EXAMPLES
examples per operation (default 6; raise it for a longer run, e.g. FUZZ_EXAMPLES=200).

Driven through hypothesis directly (``operation.as_strategy()``): schemathesis's pytest
plugin does not run under this project's pytest."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from web.live import LiveServer, serve_store

schemathesis = pytest.importorskip("schemathesis")

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "6"))
DESIGNED_503 = 503
"""A feature that is not configured (the workflow), or a request out of time: designed."""


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """An open service (every caller a manager) of its own: the calls delete and push."""
    yield from serve_store(tmp_path_factory.mktemp("fuzz"), {"ARCHIVE_REQUEST_TIMEOUT": "20"})


def test_no_generated_call_gets_a_server_error(fuzzed: LiveServer) -> None:
    schema = schemathesis.openapi.from_url(f"{fuzzed.url}/api/openapi.json")
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def call(case: Any) -> None:
            response = case.call(base_url=fuzzed.url, timeout=60)
            if response.status_code >= 500 and response.status_code != DESIGNED_503:
                failures.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: "
                    f"{response.text[:300]}"
                )

        call()
    assert operations > 20
    assert not failures, "\n".join(failures[:20])
