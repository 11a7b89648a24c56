"""Cassandra settings: parsed and checked before any connection."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import pytest
from cassandra import ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider

from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.storage.cassandra.config import (
    CassandraConfig,
    auth_provider,
    consistency_level,
    load_config,
    parse_contact_points,
    parse_replication,
    ssl_context,
    validate_keyspace,
)
from imixs_archive.storage.cassandra.cql import NETWORK_TOPOLOGY, SIMPLE, Replication

# --- contact points ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("localhost", (("localhost", 9042),)),
        ("cass1:9142", (("cass1", 9142),)),
        (" a , b:1 ,", (("a", 9042), ("b", 1))),
        ("10.0.0.1:9042,10.0.0.2", (("10.0.0.1", 9042), ("10.0.0.2", 9042))),
        ("[::1]:9043", (("::1", 9043),)),
        ("[fe80::1]", (("fe80::1", 9042),)),
        ("::1", (("::1", 9042),)),
        ("cassandra.example.org:65535", (("cassandra.example.org", 65535),)),
    ],
)
def test_contact_points(text: str, expected: tuple[tuple[str, int], ...]) -> None:
    assert parse_contact_points(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " , ",
        "host:",
        "host:0",
        "host:65536",
        "host:port",
        ":9042",
        "[::1",
        "[::1]x",
        "[]:1",
        "a b",
        "user@host",
        "host/path",
    ],
)
def test_bad_contact_points(text: str) -> None:
    with pytest.raises(ConfigError, match="ARCHIVE_CLUSTER_CONTACTPOINTS"):
        parse_contact_points(text)


def test_hosts_for_messages() -> None:
    config = _config(contact_points=(("a", 9042), ("::1", 9043)))
    assert config.hosts == "a:9042, [::1]:9043"


# --- keyspace ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["imixs_archive", "archive", "archive_test_abcdef", "ks1"])
def test_valid_keyspaces(name: str) -> None:
    assert validate_keyspace(name) == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", r"\^\[a-z_\]"),
        ("archive-", r"\^\[a-z_\]"),
        ("my-archive", r"\^\[a-z_\]"),
        ("archive2024", r"\^\[a-z_\]"),  # the Java pattern allows a digit only at the end
        ("ks; DROP KEYSPACE x", r"\^\[a-z_\]"),
        ("ks;", "not a safe keyspace name"),  # passes the Java pattern
        ("ks'", "not a safe keyspace name"),
        ("ks.", "not a safe keyspace name"),
        ("archivE", "not a safe keyspace name"),
        ("ks ", "not a safe keyspace name"),
        ("select", "not a safe keyspace name"),
        ("a" * 49, "not a safe keyspace name"),
        ("system", "system keyspace"),
        ("system_auth", "system keyspace"),
    ],
)
def test_invalid_keyspaces(name: str, why: str) -> None:
    with pytest.raises(ConfigError, match="ARCHIVE_CLUSTER_KEYSPACE") as caught:
        validate_keyspace(name)
    assert caught.match(why)


# --- replication ------------------------------------------------------------------------


def test_simple_replication() -> None:
    assert parse_replication("SimpleStrategy", "3") == Replication(
        SIMPLE, (("replication_factor", 3),)
    )
    assert parse_replication("org.apache.cassandra.locator.SimpleStrategy", " 1 ") == (
        Replication(SIMPLE, (("replication_factor", 1),))
    )


def test_network_topology_replication() -> None:
    assert parse_replication("NetworkTopologyStrategy", "dc1:3, dc2:2") == Replication(
        NETWORK_TOPOLOGY, (("dc1", 3), ("dc2", 2))
    )
    assert parse_replication("NetworkTopologyStrategy", "3", local_dc="datacenter1") == (
        Replication(NETWORK_TOPOLOGY, (("datacenter1", 3),))
    )


@pytest.mark.parametrize(
    ("strategy", "factor", "local_dc", "setting"),
    [
        ("LocalStrategy", "1", "", "REPLICATION_CLASS"),
        ("", "1", "", "REPLICATION_CLASS"),
        ("SimpleStrategy", "dc1:3", "", "REPLICATION_FACTOR"),
        ("SimpleStrategy", "three", "", "REPLICATION_FACTOR"),
        ("SimpleStrategy", "0", "", "REPLICATION_FACTOR"),
        ("SimpleStrategy", "-1", "", "REPLICATION_FACTOR"),
        ("NetworkTopologyStrategy", "3", "", "REPLICATION_FACTOR"),
        ("NetworkTopologyStrategy", "dc1:3,dc1:2", "", "REPLICATION_FACTOR"),
        ("NetworkTopologyStrategy", "dc1:x", "", "REPLICATION_FACTOR"),
        ("NetworkTopologyStrategy", ":3", "", "REPLICATION_FACTOR"),
        ("NetworkTopologyStrategy", "dc1", "", "REPLICATION_FACTOR"),
        ("NetworkTopologyStrategy", "dc1':1:3", "", "REPLICATION_FACTOR"),
        ("NetworkTopologyStrategy", "3", "dc'x", "REPLICATION_FACTOR"),
    ],
)
def test_bad_replication(strategy: str, factor: str, local_dc: str, setting: str) -> None:
    with pytest.raises(ConfigError, match=f"ARCHIVE_CLUSTER_{setting}"):
        parse_replication(strategy, factor, local_dc)


# --- consistency ------------------------------------------------------------------------


def test_consistency_levels() -> None:
    assert consistency_level("LOCAL_QUORUM", write=False) == ConsistencyLevel.LOCAL_QUORUM
    assert consistency_level("quorum", write=True) == ConsistencyLevel.QUORUM
    assert consistency_level("ANY", write=True) == ConsistencyLevel.ANY
    assert consistency_level("local_one", write=False) == ConsistencyLevel.LOCAL_ONE


@pytest.mark.parametrize(("name", "write"), [("ANY", False), ("SERIAL", True), ("MOST", False)])
def test_bad_consistency_levels(name: str, write: bool) -> None:
    setting = "WRITE" if write else "READ"
    with pytest.raises(ConfigError, match=f"ARCHIVE_CLUSTER_CONSISTENCY_{setting}"):
        consistency_level(name, write=write)


# --- the whole settings -----------------------------------------------------------------


def test_defaults() -> None:
    config = load_config(load_settings({"ARCHIVE_CLUSTER_CONTACTPOINTS": "cassandra"}))
    assert config.contact_points == (("cassandra", 9042),)
    assert config.keyspace == "imixs_archive"
    assert config.replication is None  # not chosen: see choose_replication
    assert (config.consistency_read, config.consistency_write) == ("LOCAL_QUORUM", "LOCAL_QUORUM")
    assert config.request_timeout == 30.0
    assert config.write_concurrency == 8
    assert config.protocol_version == 4 and config.ssl_check_hostname is True
    assert ssl_context(config) is None
    assert auth_provider(config) is None
    assert "password=" not in repr(config)


def test_every_setting_is_read() -> None:
    env = {
        "ARCHIVE_CLUSTER_CONTACTPOINTS": "a:9000,[::1]:9001",
        "ARCHIVE_CLUSTER_KEYSPACE": "archive",
        "ARCHIVE_CLUSTER_REPLICATION_CLASS": "NetworkTopologyStrategy",
        "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "3",
        "ARCHIVE_CLUSTER_LOCAL_DC": "dc1",
        "ARCHIVE_CLUSTER_AUTH_USER": "archive",
        "ARCHIVE_CLUSTER_AUTH_PASSWORD": "s3cret",
        "ARCHIVE_CLUSTER_CONSISTENCY_READ": "one",
        "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "each_quorum",
        "ARCHIVE_CLUSTER_REQUEST_TIMEOUT": "12.5",
        "ARCHIVE_CLUSTER_WRITE_CONCURRENCY": "4",
        "ARCHIVE_CLUSTER_RETRIES": "2",
    }
    config = load_config(load_settings(env))
    assert config.contact_points == (("a", 9000), ("::1", 9001))
    assert config.keyspace == "archive"
    assert config.replication == Replication(NETWORK_TOPOLOGY, (("dc1", 3),))
    assert config.local_dc == "dc1"
    assert (config.consistency_read, config.consistency_write) == ("ONE", "EACH_QUORUM")
    assert (config.request_timeout, config.write_concurrency, config.retries) == (12.5, 4, 2)
    assert "s3cret" not in repr(config)
    provider = auth_provider(config)
    assert isinstance(provider, PlainTextAuthProvider)
    assert (provider.username, provider.password) == ("archive", "s3cret")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ARCHIVE_CLUSTER_CONTACTPOINTS": ""}, "CONTACTPOINTS"),
        ({"ARCHIVE_CLUSTER_KEYSPACE": "my-archive"}, "KEYSPACE"),
        ({"ARCHIVE_CLUSTER_CONSISTENCY_READ": "ANY"}, "CONSISTENCY_READ"),
        ({"ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "LOCAL"}, "CONSISTENCY_WRITE"),
        ({"ARCHIVE_CLUSTER_REQUEST_TIMEOUT": "0"}, "REQUEST_TIMEOUT"),
        ({"ARCHIVE_CLUSTER_WRITE_CONCURRENCY": "0"}, "WRITE_CONCURRENCY"),
        ({"ARCHIVE_CLUSTER_RETRIES": "0"}, "RETRIES"),
        ({"ARCHIVE_CLUSTER_AUTH_PASSWORD": "x"}, "AUTH_USER"),
        ({"ARCHIVE_CLUSTER_SSL_CA": "/ca.pem"}, "ARCHIVE_CLUSTER_SSL is not true"),
        ({"ARCHIVE_CLUSTER_SSL": "true", "ARCHIVE_CLUSTER_SSL_CA": "/nonexistent.pem"}, "SSL_CA"),
        ({"ARCHIVE_CLUSTER_SSL": "true", "ARCHIVE_CLUSTER_SSL_KEY": "/k.pem"}, "SSL_CERT"),
    ],
)
def test_bad_settings(env: dict[str, str], message: str) -> None:
    settings = load_settings({"ARCHIVE_CLUSTER_CONTACTPOINTS": "localhost", **env})
    with pytest.raises(ConfigError, match=message):
        load_config(settings)


# --- TLS from PEM files -----------------------------------------------------------------


def _config(**changes: object) -> CassandraConfig:
    base: dict[str, object] = {
        "contact_points": (("localhost", 9042),),
        "keyspace": "imixs_archive",
        "replication": Replication(SIMPLE, (("replication_factor", 1),)),
    }
    base.update(changes)
    return CassandraConfig(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def pem_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A self-signed CA and a client certificate signed by it, made with openssl."""
    folder = tmp_path_factory.mktemp("pem")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    )
    run(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=archive",
        "-keyout",
        "client.key",
        "-out",
        "client.csr",
    )
    run(
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        "client.pem",
    )
    return {name: folder / f"{name}" for name in ("ca.pem", "client.pem", "client.key")}


def test_tls_with_ca_and_client_certificate(pem_files: dict[str, Path]) -> None:
    config = _config(
        ssl=True,
        ssl_ca=str(pem_files["ca.pem"]),
        ssl_cert=str(pem_files["client.pem"]),
        ssl_key=str(pem_files["client.key"]),
    )
    context = ssl_context(config)
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is True  # the driver then checks each node's address
    assert [cert["subject"] for cert in context.get_ca_certs()] == [((("commonName", "test-ca"),),)]


def test_tls_host_name_check_can_be_turned_off(pem_files: dict[str, Path]) -> None:
    settings = load_settings(
        {
            "ARCHIVE_CLUSTER_CONTACTPOINTS": "cass1",
            "ARCHIVE_CLUSTER_SSL": "true",
            "ARCHIVE_CLUSTER_SSL_CA": str(pem_files["ca.pem"]),
            "ARCHIVE_CLUSTER_SSL_CHECK_HOSTNAME": "false",
        }
    )
    context = ssl_context(load_config(settings))
    assert context is not None and context.check_hostname is False


def test_tls_with_system_trust_store() -> None:
    context = ssl_context(_config(ssl=True))
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_tls_with_a_file_that_is_not_pem(tmp_path: Path, pem_files: dict[str, Path]) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    with pytest.raises(ConfigError, match="TLS files"):
        ssl_context(_config(ssl=True, ssl_ca=str(junk)))
    with pytest.raises(ConfigError, match="TLS files"):
        ssl_context(_config(ssl=True, ssl_cert=str(pem_files["client.pem"]), ssl_key=str(junk)))
