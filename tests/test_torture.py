"""The concurrency and fault torture, short (``tests/support/torture``; the long run is
``bench/torture.py``): rounds of real processes at once against one store, some SIGKILLed,
``serve`` killed and started again, the store checked against the harness's model after
every round. On each store for about a minute.

The seed is new each run (the runs of CI add up to a long torture) unless
``ARCHIVE_TORTURE_SEED`` names one; a failure says its seed and the commands that replay
its schedule. The timing across processes is not deterministic: a replay runs the same
operations with the same data and the same kill delays, which may land elsewhere."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from support.backends import cassandra_target
from support.torture.runner import Torture
from support.torture.schedule import SHORT, SHORT_CASSANDRA

SECONDS = {"sqlite": 60, "cassandra": 45}
"""Rounds start until this many seconds have gone (the last one then finishes: on
Cassandra a round and its checks take longer). Both stores within three minutes."""
ROUNDS = 3
"""And at least this many rounds, however long they take (a loaded machine made two in
45 s on Cassandra, and the run failed for doing too little)."""


@pytest.mark.slow
@pytest.mark.parametrize(
    "store", ["sqlite", pytest.param("cassandra", marks=pytest.mark.cassandra)]
)
def test_the_store_survives_the_torture(store: str, tmp_path: Path) -> None:
    if store == "cassandra" and not cassandra_target():
        pytest.skip("set ARCHIVE_TEST_CASSANDRA=host:port to run the torture on Cassandra")
    seed = int(os.environ.get("ARCHIVE_TORTURE_SEED") or random.SystemRandom().randrange(10**6))
    said: list[str] = []
    torture = Torture(
        seed,
        store,
        tmp_path / store,
        profile=SHORT if store == "sqlite" else SHORT_CASSANDRA,
        cassandra=cassandra_target(),
        say=said.append,
    )
    tally = torture.run(seconds=SECONDS[store], at_least=ROUNDS)
    pytest_replay = (
        f"ARCHIVE_TORTURE_SEED={seed} .venv/bin/python -m pytest tests/test_torture.py -k {store}"
    )
    assert not tally.failures, "\n".join([*said[-40:], f"  or: {pytest_replay}"])
    assert tally.rounds >= ROUNDS, tally.line()
