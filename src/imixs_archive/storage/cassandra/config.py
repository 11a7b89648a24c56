"""Cassandra settings checked and turned into what the driver takes.

Everything a user can get wrong is refused here, before any connection, with a
:class:`~imixs_archive.errors.ConfigError` naming the environment variable.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cassandra import ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider

from imixs_archive.config import Settings
from imixs_archive.errors import ConfigError
from imixs_archive.storage.cassandra.cql import (
    NETWORK_TOPOLOGY,
    SIMPLE,
    Replication,
    check_identifier,
)

DEFAULT_PORT = 9042
PROTOCOL_VERSIONS = (4, 5)
"""Native protocol versions the archive speaks (both carry what it needs)."""
JAVA_KEYSPACE_PATTERN = re.compile(r"^[a-z_]*[^-]$")
SYSTEM_KEYSPACES = frozenset(
    (
        "system",
        "system_auth",
        "system_distributed",
        "system_schema",
        "system_traces",
        "system_views",
        "system_virtual_schema",
    )
)
WRITE_LEVELS = (
    "ANY",
    "ONE",
    "TWO",
    "THREE",
    "QUORUM",
    "ALL",
    "LOCAL_QUORUM",
    "EACH_QUORUM",
    "LOCAL_ONE",
)
READ_LEVELS = tuple(level for level in WRITE_LEVELS if level != "ANY")


@dataclass(frozen=True)
class CassandraConfig:
    """The checked form of the ``cluster_*`` settings."""

    contact_points: tuple[tuple[str, int], ...]
    keyspace: str
    replication: Replication | None
    """None: not chosen (ARCHIVE_CLUSTER_REPLICATION_FACTOR unset); see
    :func:`choose_replication`."""
    local_dc: str = ""
    user: str = ""
    password: str = field(default="", repr=False)
    ssl: bool = False
    ssl_check_hostname: bool = True
    ssl_ca: str = ""
    ssl_cert: str = ""
    ssl_key: str = ""
    consistency_read: str = "LOCAL_QUORUM"
    consistency_write: str = "LOCAL_QUORUM"
    request_timeout: float = 30.0
    write_concurrency: int = 8
    retries: int = 5
    protocol_version: int = 4

    @property
    def hosts(self) -> str:
        """The contact points as written in a message: ``a:9042, [::1]:9042``."""
        return ", ".join(format_endpoint(host, port) for host, port in self.contact_points)


def format_endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_contact_points(text: str) -> tuple[tuple[str, int], ...]:
    """``host``, ``host:port``, ``[ipv6]:port`` or a bare IPv6 address, comma separated."""
    points = []
    for item in (part.strip() for part in text.split(",")):
        if item:
            points.append(_parse_endpoint(item))
    if not points:
        raise ConfigError("ARCHIVE_CLUSTER_CONTACTPOINTS: no contact point given")
    return tuple(points)


def _parse_endpoint(item: str) -> tuple[str, int]:
    def fail(why: str) -> ConfigError:
        return ConfigError(f"ARCHIVE_CLUSTER_CONTACTPOINTS: {item!r}: {why}")

    port_text: str | None

    if item.startswith("["):
        host, sep, rest = item[1:].partition("]")
        if not sep or not host:
            raise fail("expected [ipv6] or [ipv6]:port")
        if not rest:
            return host, DEFAULT_PORT
        if not rest.startswith(":"):
            raise fail("expected [ipv6]:port")
        port_text = rest[1:]
    elif item.count(":") > 1:
        return item, DEFAULT_PORT  # a bare IPv6 address
    elif ":" in item:
        host, _, port_text = item.partition(":")
    else:
        host, port_text = item, None
    if not host or any(char.isspace() or char in "/@?#" for char in host):
        raise fail("not a host name or address")
    if port_text is None:
        return host, DEFAULT_PORT
    if not _is_number(port_text) or not 1 <= int(port_text) <= 65535:
        raise fail(f"port must be a number from 1 to 65535, got {port_text!r}")
    return host, int(port_text)


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def validate_keyspace(name: str) -> str:
    """The keyspace name, checked as the Java service checks it (``^[a-z_]*[^-]$``) and as a
    safe CQL identifier, since it is the one name written into DDL from a setting."""
    if not JAVA_KEYSPACE_PATTERN.match(name):
        raise ConfigError(f"ARCHIVE_CLUSTER_KEYSPACE: {name!r} does not match ^[a-z_]*[^-]$")
    try:
        check_identifier(name)
    except ValueError:
        raise ConfigError(
            f"ARCHIVE_CLUSTER_KEYSPACE: {name!r} is not a safe keyspace name: use lower-case "
            "letters, digits and '_', at most 48 characters, not a CQL keyword"
        ) from None
    if name in SYSTEM_KEYSPACES:
        raise ConfigError(f"ARCHIVE_CLUSTER_KEYSPACE: {name!r} is a Cassandra system keyspace")
    return name


def parse_replication(strategy: str, factor: str, local_dc: str = "") -> Replication | None:
    """``SimpleStrategy`` + ``"3"``; ``NetworkTopologyStrategy`` + ``"dc1:3,dc2:2"``, or + ``"3"``
    applied to the local datacenter. An empty factor: None, nothing chosen."""
    if not factor.strip():
        return None
    short = strategy.strip().rsplit(".", 1)[-1]  # org.apache.cassandra.locator.X is accepted
    if short not in (SIMPLE, NETWORK_TOPOLOGY):
        raise ConfigError(
            f"ARCHIVE_CLUSTER_REPLICATION_CLASS: {strategy!r}: use {SIMPLE} or {NETWORK_TOPOLOGY}"
        )
    text = factor.strip()
    try:
        if short == SIMPLE:
            if ":" in text:
                raise ValueError(f"{SIMPLE} takes one number, not per-datacenter factors")
            return Replication(SIMPLE, (("replication_factor", _factor(text)),))
        if ":" not in text:
            if not local_dc:
                raise ValueError(
                    "a plain number needs ARCHIVE_CLUSTER_LOCAL_DC, or give 'dc1:3,dc2:2'"
                )
            return Replication(NETWORK_TOPOLOGY, ((local_dc, _factor(text)),))
        return Replication(NETWORK_TOPOLOGY, _datacenter_factors(text))
    except ValueError as exc:
        raise ConfigError(f"ARCHIVE_CLUSTER_REPLICATION_FACTOR: {factor!r}: {exc}") from None


def _factor(text: str) -> int:
    if not _is_number(text.strip()):
        raise ValueError(f"not a number: {text.strip()!r}")
    return int(text)


def _datacenter_factors(text: str) -> tuple[tuple[str, int], ...]:
    factors: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        dc, sep, number = (part.strip() for part in item.partition(":"))
        if not sep or not dc:
            raise ValueError(f"expected datacenter:factor, got {item!r}")
        if dc in factors:
            raise ValueError(f"datacenter {dc!r} given twice")
        factors[dc] = _factor(number)
    return tuple(factors.items())


def choose_replication(
    configured: Replication | None, keyspace: str, nodes: int, datacenters: Mapping[str, int]
) -> tuple[Replication, str | None]:
    """The replication a new keyspace is created with, and a warning to log (or None).

    How many copies a cluster keeps is the operator's decision: unset, a one-node
    cluster (a developer's node) gets one copy with a warning; a cluster of several
    nodes is refused until ``ARCHIVE_CLUSTER_REPLICATION_FACTOR`` is set. One copy set
    explicitly on several nodes is allowed, with a loud warning."""
    if configured is None:
        if nodes <= 1:
            return Replication(SIMPLE, (("replication_factor", 1),)), (
                f"creating keyspace {keyspace!r} with ONE copy of every row (one-node cluster, "
                "ARCHIVE_CLUSTER_REPLICATION_FACTOR unset): fine for a try-out, not for data "
                "that must survive a disk; see docs/cassandra.md"
            )
        suggestion = ", ".join(f"{dc}:{min(3, count)}" for dc, count in sorted(datacenters.items()))
        raise ConfigError(
            f"ARCHIVE_CLUSTER_REPLICATION_FACTOR is not set and the cluster has {nodes} nodes: "
            f"decide how many copies keyspace {keyspace!r} keeps before it is created, e.g. "
            "ARCHIVE_CLUSTER_REPLICATION_CLASS=NetworkTopologyStrategy "
            f"ARCHIVE_CLUSTER_REPLICATION_FACTOR={suggestion or '3'} (see docs/cassandra.md)"
        )
    if nodes > 1 and min(factor for _, factor in configured.factors) < 2:
        return configured, (
            f"keyspace {keyspace!r} is created with {configured.literal()} on a cluster of "
            f"{nodes} nodes: a datacenter keeps ONE copy of every row, so losing one disk "
            "loses archived data. Set ARCHIVE_CLUSTER_REPLICATION_FACTOR to 3 unless you mean it"
        )
    return configured, None


def consistency_level(name: str, *, write: bool) -> int:
    """The driver's ``ConsistencyLevel`` value for a level name (case-insensitive)."""
    setting = "ARCHIVE_CLUSTER_CONSISTENCY_" + ("WRITE" if write else "READ")
    allowed = WRITE_LEVELS if write else READ_LEVELS
    level = name.strip().upper()
    if level not in allowed:
        raise ConfigError(f"{setting}: {name!r}: use one of {', '.join(allowed)}")
    value: int = ConsistencyLevel.name_to_value[level]
    return value


def ssl_context(config: CassandraConfig) -> ssl.SSLContext | None:
    """A client TLS context from PEM files, or None when TLS is off.

    The server chain is verified against ``ssl_ca`` (or the system's CAs), and each node's
    certificate must name the address the driver connects to (an IP address SAN, or the
    host name given as contact point) unless ``ssl_check_hostname`` is off.
    """
    if not config.ssl:
        if config.ssl_ca or config.ssl_cert or config.ssl_key:
            raise ConfigError(
                "ARCHIVE_CLUSTER_SSL_CA/CERT/KEY are set but ARCHIVE_CLUSTER_SSL is not true"
            )
        return None
    if config.ssl_key and not config.ssl_cert:
        raise ConfigError("ARCHIVE_CLUSTER_SSL_KEY is set without ARCHIVE_CLUSTER_SSL_CERT")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = config.ssl_check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    try:
        if config.ssl_ca:
            context.load_verify_locations(cafile=_pem(config.ssl_ca, "ARCHIVE_CLUSTER_SSL_CA"))
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if config.ssl_cert:
            certfile = _pem(config.ssl_cert, "ARCHIVE_CLUSTER_SSL_CERT")
            keyfile = _pem(config.ssl_key, "ARCHIVE_CLUSTER_SSL_KEY") if config.ssl_key else None
            context.load_cert_chain(certfile, keyfile)
    except ssl.SSLError as exc:
        raise ConfigError(f"TLS files for Cassandra cannot be used: {exc}") from None
    return context


def _pem(path: str, setting: str) -> str:
    if not Path(path).is_file():
        raise ConfigError(f"{setting}: {path!r} is not a readable file")
    return path


def auth_provider(config: CassandraConfig) -> PlainTextAuthProvider | None:
    if not config.user:
        if config.password:
            raise ConfigError(
                "ARCHIVE_CLUSTER_AUTH_PASSWORD is set without ARCHIVE_CLUSTER_AUTH_USER"
            )
        return None
    return PlainTextAuthProvider(username=config.user, password=config.password)


def load_config(settings: Settings) -> CassandraConfig:
    """Check every ``cluster_*`` setting; ConfigError on the first one that is wrong."""
    local_dc = settings.cluster_local_dc.strip()
    config = CassandraConfig(
        contact_points=parse_contact_points(settings.cluster_contactpoints),
        keyspace=validate_keyspace(settings.cluster_keyspace.strip()),
        replication=parse_replication(
            settings.cluster_replication_class, settings.cluster_replication_factor, local_dc
        ),
        local_dc=local_dc,
        user=settings.cluster_auth_user,
        password=settings.cluster_auth_password,
        ssl=settings.cluster_ssl,
        ssl_check_hostname=settings.cluster_ssl_check_hostname,
        ssl_ca=settings.cluster_ssl_ca,
        ssl_cert=settings.cluster_ssl_cert,
        ssl_key=settings.cluster_ssl_key,
        consistency_read=settings.cluster_consistency_read.strip().upper(),
        consistency_write=settings.cluster_consistency_write.strip().upper(),
        request_timeout=settings.cluster_request_timeout,
        write_concurrency=settings.cluster_write_concurrency,
        retries=settings.cluster_retries,
        protocol_version=settings.cluster_protocol_version,
    )
    consistency_level(config.consistency_read, write=False)
    consistency_level(config.consistency_write, write=True)
    _check_numbers(config)
    ssl_context(config)  # refuse unusable TLS files now, not at the first connection
    auth_provider(config)
    return config


def _check_numbers(config: CassandraConfig) -> None:
    if not config.request_timeout > 0:
        raise ConfigError("ARCHIVE_CLUSTER_REQUEST_TIMEOUT must be more than 0 seconds")
    if config.write_concurrency < 1:
        raise ConfigError("ARCHIVE_CLUSTER_WRITE_CONCURRENCY must be at least 1")
    if config.retries < 1:
        raise ConfigError("ARCHIVE_CLUSTER_RETRIES must be at least 1 (the first attempt)")
    if config.protocol_version not in PROTOCOL_VERSIONS:
        raise ConfigError(
            f"ARCHIVE_CLUSTER_PROTOCOL_VERSION: {config.protocol_version}: use "
            + " or ".join(str(v) for v in PROTOCOL_VERSIONS)
        )
