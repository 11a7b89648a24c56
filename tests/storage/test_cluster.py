"""A real three-node Cassandra cluster: nodes stopped and killed while the archive works.

Needs a cluster from ``scripts/cassandra-node start --nodes 3`` and
``ARCHIVE_TEST_CLUSTER=host1,host2,host3`` (``.ci/run`` starts one beside the main node,
on 127.0.0.11-13 with ``CASSANDRA_NODE_FIRST=11``; ``ARCHIVE_TEST_CLUSTER_HOME`` and
``ARCHIVE_TEST_CLUSTER_FIRST`` tell these tests where that cluster's node folders are, so
that they can stop and start its nodes). The keyspace keeps three copies
(``NetworkTopologyStrategy``), the archive reads and writes at ``LOCAL_QUORUM``.
"""

from __future__ import annotations

import fcntl
import os
import random
import string
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.config import load_settings
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.recovery.restore import Restorer
from imixs_archive.storage.cassandra.backend import CassandraBackend
from imixs_archive.storage.model import SNAPSHOTS
from imixs_archive.sync.service import SyncConfig, SyncService
from imixs_archive.workflow.client import WorkflowClient
from support.restore_data import file_hashes
from support.workflow_double import WorkflowDouble

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(900)]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cassandra-node"
SKIP = "set ARCHIVE_TEST_CLUSTER=host1,host2,host3 (scripts/cassandra-node start --nodes 3)"


def contact_points() -> list[str]:
    return [h.strip() for h in os.environ.get("ARCHIVE_TEST_CLUSTER", "").split(",") if h.strip()]


def node(command: str, k: int, *extra: str) -> None:
    """Stop or start node ``k`` of the test cluster with scripts/cassandra-node."""
    subprocess.run([str(SCRIPT), command, "--node", str(k), *extra], env=_script_env(), check=True)


def start_nodes(*nodes: int) -> None:
    """Start these nodes of the test cluster at once, not one after the other: each start
    is mostly the JVM's own start-up and waiting for gossip (some 15 s), which overlap.
    The seed (node 1) first, when it is among them: a node that starts while no seed
    answers gives up ("Unable to gossip with any peers")."""
    if 1 in nodes:
        node("start", 1)
    others = [k for k in nodes if k != 1]
    started = [
        subprocess.Popen([str(SCRIPT), "start", "--node", str(k)], env=_script_env())
        for k in others
    ]
    codes = [process.wait() for process in started]
    assert codes == [0] * len(others), f"nodes {others} started with exit codes {codes}"


def settings_for(keyspace: str, **extra: str) -> Any:
    return load_settings(
        {
            "ARCHIVE_CLUSTER_CONTACTPOINTS": ",".join(contact_points()),
            "ARCHIVE_CLUSTER_KEYSPACE": keyspace,
            "ARCHIVE_CLUSTER_REPLICATION_CLASS": "NetworkTopologyStrategy",
            "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "datacenter1:3",
            "ARCHIVE_CLUSTER_CONSISTENCY_READ": "LOCAL_QUORUM",
            "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "LOCAL_QUORUM",
            "ARCHIVE_CLUSTER_REQUEST_TIMEOUT": "10",
            **extra,
        }
    )


@pytest.fixture(scope="module")
def keyspace() -> str:
    """One keyspace with three copies for this file's tests, created by the first (the
    archive's own schema creation, on three nodes); the others open it as it is, as an
    archive started again does (no DDL). Its snapshots are the double's, each test's its
    own, so what an earlier test left is only more data beside them (``verify`` checks it
    all). Creating a keyspace a test took 12-27 s of schema agreement on three nodes.

    The keyspace is not dropped afterwards: dropping keyspaces right after nodes came
    back made one node's schema diverge (Cassandra 5.0.8 failed the drop with "Unknown
    CF" in its commit log recycling). The test cluster is thrown away after the run."""
    if len(contact_points()) < 3:
        pytest.skip(SKIP)
    _wait_for_the_start()
    return "cluster_" + "".join(random.choices(string.ascii_lowercase, k=10))


def _wait_for_the_start() -> None:
    """``.ci/run`` starts the tests once its single node is up, and the cluster beside
    them: ``ARCHIVE_TEST_CLUSTER_STARTING`` names the start's log, and its exit status is
    written to that name plus ``.done``. Wait for it; a start that failed fails the test
    with the log's end (the cluster tests must run)."""
    log = os.environ.get("ARCHIVE_TEST_CLUSTER_STARTING")
    if not log:
        return
    done = Path(log + ".done")
    deadline = time.monotonic() + 600
    while not done.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the cluster's start did not end within 10 minutes (its log: {log})")
        time.sleep(0.5)
    status = done.read_text().strip()
    if status != "0":
        said = Path(log).read_text(errors="replace")[-4000:] if Path(log).exists() else ""
        pytest.fail(f"the cluster did not start (exit {status}; {log}):\n{said}")


@pytest.fixture
def store(keyspace: str) -> Iterator[CassandraBackend]:
    """The keyspace, on a cluster whose three nodes are all up."""
    with _the_cluster_to_ourselves():
        _all_up()
        backend = CassandraBackend.from_settings(settings_for(keyspace))
        try:
            yield backend
        finally:
            backend.close()
            _all_up()


@contextmanager
def _the_cluster_to_ourselves() -> Iterator[None]:
    """One cluster test at a time on this machine: each stops and kills nodes, and would
    see another's stopped node. The suite runs this file on one xdist worker (``--dist
    loadfile``); the lock holds whatever the distribution, and across runs at once."""
    with (Path(tempfile.gettempdir()) / "imixs-archive-cluster-tests.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _all_up() -> None:
    down = _down()
    if down:
        start_nodes(*down)


def _script_env() -> dict[str, str]:
    env = dict(os.environ)
    env["CASSANDRA_NODE_FIRST"] = os.environ.get("ARCHIVE_TEST_CLUSTER_FIRST", "1")
    home = os.environ.get("ARCHIVE_TEST_CLUSTER_HOME", "")
    if home:
        env["CASSANDRA_NODE_HOME"] = home
    return env


def _down() -> list[int]:
    """The nodes whose CQL does not answer (one ``status``: it asks each node)."""
    out = subprocess.run(
        [str(SCRIPT), "status"], env=_script_env(), capture_output=True, text=True
    ).stdout
    up = {line.split()[1] for line in out.splitlines() if "CQL answers" in line}
    return [k for k in (1, 2, 3) if str(k) not in up]


def _seen_down(*nodes: int) -> None:
    """Wait until node 1 marks ``nodes`` down (gossip's failure detector: some seconds
    after a kill). Before that it still sends them requests, and a write times out
    (``StoreError``, after the archive's retries) instead of being refused at once
    (``StoreUnavailableError``): seen when the test ran right after the last node start."""
    addresses = {contact_points()[k - 1] for k in nodes}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run(
            [str(SCRIPT), "nodetool", "--node", "1", "status"],
            env=_script_env(),
            capture_output=True,
            text=True,
        ).stdout
        down = {line.split()[1] for line in out.splitlines() if line.startswith("DN ")}
        if addresses <= down:
            return
        time.sleep(1)
    raise AssertionError(f"node 1 did not mark {sorted(addresses)} down in 60 s:\n{out}")


def _fill(double: WorkflowDouble, count: int) -> None:
    rng = random.Random(7)
    for n in range(count):
        files = {"scan.pdf": rng.randbytes(rng.randint(1_000, 300_000))} if n % 5 == 0 else None
        double.save(files=files, subject=f"case {n}", txtnote="x" * rng.randint(100, 4000))


def _sync_until_done(
    archive: Archive, double: WorkflowDouble, during: Callable[[int], None] | None = None
) -> None:
    """Sync rounds until the event log is empty; ``during(round)`` runs between rounds.
    Rounds that pause (store or workflow unavailable) are retried, as the loop does."""
    with WorkflowClient(double.url, read_timeout=30) as client:
        config = SyncConfig(interval_ms=10, initial_delay_ms=0, workers=4, batch=25)
        service = SyncService(archive, client, config)
        try:
            deadline = time.monotonic() + 600
            rounds, pause = 0, ""
            while time.monotonic() < deadline:
                if during is not None:
                    during(rounds)
                rounds += 1
                result = service.run_round()
                if not result.read and not double.events():
                    return
                if not result.read:
                    pause = result.pause or pause
                    time.sleep(0.5)
            left = len(double.events())
            raise AssertionError(f"events left after 600 s: {left}; last pause: {pause}")
        finally:
            service.close()


def _assert_all_archived(archive: Archive, double: WorkflowDouble) -> None:
    assert double.snapshots
    for snapshot_id, snapshot in double.snapshots.items():
        loaded = archive.load(snapshot_id)
        assert file_hashes(loaded) == file_hashes(snapshot)
        assert {k: v for k, v in loaded.items() if k != "$file"} == {
            k: v for k, v in snapshot.items() if k != "$file"
        }


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_sync_goes_on_while_a_node_is_stopped(
    store: CassandraBackend, double: WorkflowDouble, how: str
) -> None:
    _fill(double, 200)

    def take_node_3_down(round_number: int) -> None:
        if round_number == 2:
            node("stop", 3, *(["--kill"] if how == "kill" else []))

    with Archive(store) as archive:
        _sync_until_done(archive, double, take_node_3_down)
        _assert_all_archived(archive, double)
    node("start", 3)


def test_two_nodes_down_pause_and_lose_nothing_then_resume(
    store: CassandraBackend, double: WorkflowDouble
) -> None:
    _fill(double, 60)
    events_before = len(double.events())
    node("stop", 3, "--kill")
    node("stop", 2, "--kill")
    _seen_down(2, 3)
    with Archive(store) as archive:
        with pytest.raises(StoreUnavailableError):
            archive.store(double.snapshots[next(iter(double.snapshots))])
        with WorkflowClient(double.url, read_timeout=30) as client:
            service = SyncService(
                archive, client, SyncConfig(interval_ms=10, initial_delay_ms=0, workers=4)
            )
            try:
                result = service.run_round()
            finally:
                service.close()
        assert "unavailable" in result.pause  # paused: nothing counted, nothing removed
        assert len(double.events()) == events_before  # nothing removed from the event log
        node("start", 2)
        _sync_until_done(archive, double)
        _assert_all_archived(archive, double)
    node("start", 3)


def test_a_node_that_missed_writes_is_brought_up_to_date(
    store: CassandraBackend, double: WorkflowDouble
) -> None:
    _fill(double, 80)
    node("stop", 3, "--kill")
    with Archive(store) as archive:
        _sync_until_done(archive, double)
        node("start", 3)
        _assert_all_archived(archive, double)
        assert verify(store).problems == []
    keyspace = store._keyspace
    node("nodetool", 3, "repair", "--full", keyspace)
    # Node 3 alone, at ONE: it answers every row because repair (and hints) brought it
    # up to date, not because another replica answered for it.
    only_3 = settings_for(
        keyspace,
        ARCHIVE_CLUSTER_CONTACTPOINTS=contact_points()[2],
        ARCHIVE_CLUSTER_CONSISTENCY_READ="ONE",
    )
    alone = _single_host_backend(only_3, contact_points()[2])
    try:
        node("stop", 1)
        node("stop", 2)
        found = {row["snapshot"] for row in alone.scan(SNAPSHOTS, columns=["snapshot"])}
        assert set(double.snapshots) <= found
    finally:
        alone.close()
        start_nodes(1, 2)


def _single_host_backend(settings: Any, host: str) -> CassandraBackend:
    """A backend whose driver talks to ``host`` only (reads at ONE are then node 3's)."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy
    from cassandra.query import tuple_factory

    from imixs_archive.storage.cassandra.config import load_config
    from imixs_archive.storage.cassandra.session import DriverSession

    config = load_config(settings)
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([host]),
        request_timeout=10,
        row_factory=tuple_factory,
    )
    cluster = Cluster(
        contact_points=[host],
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        protocol_version=config.protocol_version,
    )
    session = cluster.connect()
    return CassandraBackend(DriverSession(cluster, session, config), config)


def test_a_restore_completes_while_one_node_is_down(
    store: CassandraBackend, double: WorkflowDouble
) -> None:
    _fill(double, 40)
    with Archive(store) as archive:
        _sync_until_done(archive, double)
        before = dict(double.snapshots)
        double.wipe()
        node("stop", 2, "--kill")
        with WorkflowClient(double.url, read_timeout=30) as client:
            restorer = Restorer(archive, client)
            for snapshot_id in before:
                assert restorer.restore_snapshot(snapshot_id) is True
        for snapshot_id, snapshot in before.items():
            assert file_hashes(double.snapshots[snapshot_id]) == file_hashes(snapshot)
    node("start", 2)
