"""Configuration: every setting declared once, with its environment name, default and help.

Precedence: a CLI flag (passed as an override) > the environment > the default.
Settings are built by :func:`load_settings` when a command starts, never at import time.
Names follow the Java Imixs-Archive where it has one (section 8 of the reference).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from imixs_archive.errors import ConfigError
from imixs_archive.timezones import check_zone


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|min|h|d)?\s*", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
DURATION_UNITS = "ms, s, m, h or d"


def _duration_ms(text: str, bare: str) -> float:
    """Milliseconds of a duration: a number in the unit ``bare`` (``ms`` or ``s``), or a
    number with a unit (``500ms``, ``30s``, ``5m``, ``24h``, ``7d``)."""
    match = _DURATION.fullmatch(text)
    if match is None:
        what = "milliseconds" if bare == "ms" else "seconds"
        raise ValueError(f"expected {what} or a number with {DURATION_UNITS}, got {text!r}")
    return float(match[1]) * _UNIT_MS[(match[2] or bare).lower()]


def _millis(text: str) -> int:
    """Milliseconds: a number, or a number with a unit (``300s``, ``2m``, ``500ms``, ``24h``)."""
    return round(_duration_ms(text, "ms"))


def _seconds(text: str) -> float:
    """Seconds: a number, or a number with a unit (``500ms``, ``30s``, ``5m``, ``1h``, ``1d``)."""
    return _duration_ms(text, "s") / 1000


def _int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"expected a whole number, got {text!r}") from None


def _count(text: str) -> int:
    """A whole number of at least 0."""
    value = _int(text)
    if value < 0:
        raise ValueError(f"expected a whole number of at least 0, got {text!r}")
    return value


def _megabytes(text: str) -> float:
    """Megabytes (10^6 bytes) per second, a number of them; 0: no limit."""
    try:
        value = float(text.strip())
    except ValueError:
        value = -1.0
    if value < 0:
        raise ValueError(f"expected megabytes per second (a number, 0: no limit), got {text!r}")
    return value


def _port(text: str) -> int:
    try:
        port = int(text.strip())
    except ValueError:
        port = 0
    if not 0 < port < 65536:
        raise ValueError(f"expected a port number from 1 to 65535, got {text!r}")
    return port


def _timeout_millis(text: str) -> int:
    """A workflow timeout: a number with a unit (``10s``, ``500ms``, ``5m``), or a bare
    number of **seconds** whatever its size, as the Java backup service reads these two
    names (``WORKFLOW_REST_READTIMEOUT=3600`` is one hour there and here)."""
    return round(_duration_ms(text, "s"))


def _choice(text: str, allowed: tuple[str, ...]) -> str:
    lowered = text.strip().lower()
    if lowered not in allowed:
        raise ValueError(f"expected one of {', '.join(allowed)}, got {text!r}")
    return lowered


FTP_CERTIFICATE_CHECKS = ("full", "chain", "dates")
"""The values of ``BACKUP_FTP_CERTIFICATE_CHECK``, strongest first."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(text: str) -> str:
    level = text.strip().upper()
    if level not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return level


def _log_format(text: str) -> str:
    kind = text.strip().lower()
    if kind not in ("text", "json"):
        raise ValueError(f"expected text or json, got {text!r}")
    return kind


def _log_levels(text: str) -> str:
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, level = part.partition("=")
        if not sep or not name.strip() or level.strip().upper() not in LOG_LEVELS:
            raise ValueError(
                "expected a comma list of logger=LEVEL (e.g. imixs_archive.sync=DEBUG), "
                f"got {part!r}"
            )
    return text.strip()


_DURATION_HELP: dict[Callable[[str], Any], str] = {
    _seconds: " A duration: a bare number is seconds; or with a unit: 500ms, 30s, 5m, 1h, 1d.",
    _millis: " A duration: a bare number is milliseconds; or with a unit: 500ms, 30s, 5m, 1h, 1d.",
    _timeout_millis: " A duration: a bare number is seconds; or with a unit: 500ms, 30s, 5m.",
}


def _setting(
    env: str, default: Any, help: str, parse: Callable[[str], Any] = str, secret: bool = False
) -> Any:
    help += _DURATION_HELP.get(parse, "")
    return field(
        default=default, metadata={"env": env, "help": help, "parse": parse, "secret": secret}
    )


@dataclass(frozen=True)
class Settings:
    # --- the embedded store ---
    data_dir: Path = _setting(
        "ARCHIVE_DATA_DIR",
        Path("archive-data"),
        "Folder of the embedded SQLite store (used when no Cassandra contact point is set).",
        Path,
    )
    # --- Cassandra (the Java service's names, plus PEM-based TLS and consistency) ---
    cluster_contactpoints: str = _setting(
        "ARCHIVE_CLUSTER_CONTACTPOINTS",
        "",
        "Comma list of Cassandra hosts (host or host:port). Set: Cassandra is used.",
    )
    cluster_keyspace: str = _setting(
        "ARCHIVE_CLUSTER_KEYSPACE",
        "imixs_archive",
        "Keyspace name; must match ^[a-z_]*[^-]$ as in the Java service.",
    )
    cluster_replication_class: str = _setting(
        "ARCHIVE_CLUSTER_REPLICATION_CLASS",
        "SimpleStrategy",
        "SimpleStrategy or NetworkTopologyStrategy (used when the keyspace is created; "
        "NetworkTopologyStrategy for a real cluster).",
    )
    cluster_replication_factor: str = _setting(
        "ARCHIVE_CLUSTER_REPLICATION_FACTOR",
        "",
        "Copies of the archive the keyspace keeps: a number, or 'dc1:3,dc2:3' for "
        "NetworkTopologyStrategy. Unset: one copy on a one-node cluster (with a warning); "
        "on several nodes the keyspace is not created until this is set.",
    )
    cluster_local_dc: str = _setting(
        "ARCHIVE_CLUSTER_LOCAL_DC", "", "Local datacenter name for datacenter-aware routing."
    )
    cluster_auth_user: str = _setting(
        "ARCHIVE_CLUSTER_AUTH_USER", "", "Cassandra user (password authentication)."
    )
    cluster_auth_password: str = _setting(
        "ARCHIVE_CLUSTER_AUTH_PASSWORD", "", "Cassandra password.", secret=True
    )
    cluster_ssl: bool = _setting(
        "ARCHIVE_CLUSTER_SSL", False, "Connect to Cassandra over TLS.", _bool
    )
    cluster_ssl_check_hostname: bool = _setting(
        "ARCHIVE_CLUSTER_SSL_CHECK_HOSTNAME",
        True,
        "Check that each node's certificate names the address connected to (as a TLS client "
        "should). false: only the chain is checked, as the Java service did.",
        _bool,
    )
    cluster_ssl_ca: str = _setting(
        "ARCHIVE_CLUSTER_SSL_CA", "", "PEM file of the CA that signed the server certificates."
    )
    cluster_ssl_cert: str = _setting(
        "ARCHIVE_CLUSTER_SSL_CERT", "", "PEM file of the client certificate (mutual TLS)."
    )
    cluster_ssl_key: str = _setting(
        "ARCHIVE_CLUSTER_SSL_KEY", "", "PEM file of the client key (mutual TLS).", secret=True
    )
    cluster_consistency_read: str = _setting(
        "ARCHIVE_CLUSTER_CONSISTENCY_READ", "LOCAL_QUORUM", "Consistency level of reads."
    )
    cluster_consistency_write: str = _setting(
        "ARCHIVE_CLUSTER_CONSISTENCY_WRITE", "LOCAL_QUORUM", "Consistency level of writes."
    )
    cluster_request_timeout: float = _setting(
        "ARCHIVE_CLUSTER_REQUEST_TIMEOUT",
        30.0,
        "Time before a Cassandra request times out.",
        _seconds,
    )
    cluster_write_concurrency: int = _setting(
        "ARCHIVE_CLUSTER_WRITE_CONCURRENCY",
        8,
        "Piece writes (and reads ahead) in flight at once. Bounds memory: each piece is at "
        "most 1 MiB, held about twice while in flight (8: under 20 MiB).",
        _int,
    )
    cluster_retries: int = _setting(
        "ARCHIVE_CLUSTER_RETRIES", 5, "Attempts for a request that timed out.", _int
    )
    cluster_protocol_version: int = _setting(
        "ARCHIVE_CLUSTER_PROTOCOL_VERSION",
        4,
        "Native protocol version spoken to Cassandra, pinned rather than negotiated "
        "(4: Cassandra 2.2 and later, ScyllaDB; 5: Cassandra 4.0 and later).",
        _int,
    )

    # --- the service: HTTP, access control (see docs/web.md) ---
    http_host: str = _setting(
        "ARCHIVE_HTTP_HOST",
        "127.0.0.1",
        "Address `serve` listens on. Any non-loopback address needs credentials configured.",
    )
    http_port: int = _setting("ARCHIVE_HTTP_PORT", 8080, "Port `serve` listens on.", _port)
    access_log: bool = _setting(
        "ARCHIVE_ACCESS_LOG",
        True,
        "`serve` logs a line per request (logger uvicorn.access: client, method, path, "
        "status); false: none.",
        _bool,
    )
    log_format: str = _setting(
        "ARCHIVE_LOG_FORMAT",
        "text",
        "How `serve` and `sync` write their log to standard error: text (a line per "
        "record) or json (a JSON object per line: time, level, logger, message; a "
        "request's client, method, path and status in the access log's).",
        _log_format,
    )
    log_level: str = _setting(
        "ARCHIVE_LOG_LEVEL",
        "INFO",
        "The least level logged: DEBUG, INFO, WARNING, ERROR.",
        _log_level,
    )
    log_levels: str = _setting(
        "ARCHIVE_LOG_LEVELS",
        "",
        "Levels per component, over ARCHIVE_LOG_LEVEL: a comma list of logger=LEVEL, e.g. "
        "imixs_archive.sync=DEBUG,imixs_archive.cassandra=WARNING,uvicorn.access=WARNING "
        "(the components: imixs_archive.<package>, imixs_archive.cassandra, "
        "imixs_archive.sqlite, uvicorn.error, uvicorn.access).",
        _log_levels,
    )
    users: str = _setting(
        "ARCHIVE_USERS",
        "",
        "Users for HTTP Basic and the login page: 'name:role:hash;...' with role reader, "
        "manager or auditor (the ledger's log only) and a hash from `imixs-archive "
        "hash-password`.",
        secret=True,
    )
    api_tokens: str = _setting(
        "ARCHIVE_API_TOKENS",
        "",
        "Bearer tokens: 'name:role:sha256-hex;...' (`imixs-archive hash-password --token`).",
        secret=True,
    )
    oidc_issuer: str = _setting(
        "ARCHIVE_OIDC_ISSUER",
        "",
        "OIDC issuer URL: bearer JWTs signed by its keys (RS256, JWKS) are accepted.",
    )
    oidc_audience: str = _setting(
        "ARCHIVE_OIDC_AUDIENCE", "", "Audience an OIDC token must carry (aud claim)."
    )
    oidc_roles_claim: str = _setting(
        "ARCHIVE_OIDC_ROLES_CLAIM",
        "roles",
        "Claim (dotted path, e.g. realm_access.roles) listing 'reader', 'manager' or 'auditor'.",
    )
    session_secret: str = _setting(
        "ARCHIVE_SESSION_SECRET",
        "",
        "Key signing login cookies; random per process when empty (logins end on restart).",
        secret=True,
    )
    max_upload_mb: int = _setting(
        "ARCHIVE_MAX_UPLOAD_MB",
        1024,
        "Largest request body accepted by POST /api/archive/snapshot (MiB); more gets 413.",
        _int,
    )
    request_timeout: float = _setting(
        "ARCHIVE_REQUEST_TIMEOUT",
        60.0,
        "Time a request may work before its answer starts; past it the work stops and "
        "the answer is 503 (0: no limit). Work also stops when the client goes away.",
        _seconds,
    )
    http_header_timeout: float = _setting(
        "ARCHIVE_HTTP_HEADER_TIMEOUT",
        10.0,
        "Time a client of `serve` has to send a request's head (request line and headers), "
        "counted from its connection or from the request's first byte; past it the "
        "connection is closed (with a 408 answer when some of the head came), so half-sent "
        "requests do not hold the service's connections (0: no limit).",
        _seconds,
    )
    http_body_timeout: float = _setting(
        "ARCHIVE_HTTP_BODY_TIMEOUT",
        60.0,
        "Time a request's body may pause (no byte arriving while `serve` waits for the "
        "rest) before the connection is closed and the request's work stops (0: no limit).",
        _seconds,
    )
    http_max_connections: int = _setting(
        "ARCHIVE_HTTP_MAX_CONNECTIONS",
        0,
        "HTTP connections `serve` keeps open at most; 0: half of its open-file limit "
        "(RLIMIT_NOFILE, LimitNOFILE= in systemd), at most 10000, so that the other half "
        "stays for the store, the log and the health checks. A connection beyond it closes "
        "the one that has waited longest for a request's head, or, when none waits, is "
        "answered 503.",
        _count,
    )
    read_memory_mb: int = _setting(
        "ARCHIVE_READ_MEMORY_MB",
        1024,
        "Memory (MiB) that requests reading large snapshots (rows over 1 MiB) may take "
        "together; more wait their turn (within ARCHIVE_REQUEST_TIMEOUT).",
        _int,
    )
    min_free_mb: int = _setting(
        "ARCHIVE_MIN_FREE_MB",
        100,
        "Free disk space (MiB) the embedded store needs; with less, /readyz says not ready.",
        _int,
    )
    trusted_proxies: str = _setting(
        "ARCHIVE_TRUSTED_PROXIES",
        "",
        "Comma list of proxy addresses (IPs) whose X-Forwarded-Proto header is believed: a "
        "request they forward as https gets Secure cookies. '*' trusts every peer.",
    )
    cookie_secure: str = _setting(
        "ARCHIVE_COOKIE_SECURE",
        "auto",
        "Secure flag of login cookies: auto (when the request is https, directly or as a "
        "trusted proxy says), always, or never.",
        lambda text: _choice(text, ("auto", "always", "never")),
    )
    backup_dir: Path = _setting(
        "ARCHIVE_BACKUP_DIR",
        Path("archive-backup"),
        "Folder under which backups started from the web API or UI are written.",
        Path,
    )
    restore_save_every: float = _setting(
        "ARCHIVE_RESTORE_SAVE_EVERY",
        2.0,
        "Time between two saves of the progress of `restore --as-of` and `restore --all` "
        "(the watermark a run killed meanwhile resumes at; the instances after it are "
        "asked of the workflow again, none is posted twice).",
        _seconds,
    )
    file_cuts: str = _setting(
        "ARCHIVE_FILE_CUTS",
        "auto",
        "Pieces new attachments are stored in: `java`, cut every 1 MiB as the Java "
        "Imixs-Archive cuts them, so that a file both services store at once is read right "
        "by both (the default on Cassandra); `content`, content-defined pieces, which also "
        "share the unchanged parts of an edited attachment (the default on the embedded "
        "store; on Cassandra only where no Java service writes into the keyspace); `auto`: "
        "by the store. See docs/java-compatibility.md.",
        lambda text: _choice(text, ("auto", "java", "content")),
    )
    java_writes: bool = _setting(
        "ARCHIVE_JAVA_WRITES",
        False,
        "The Java Imixs-Archive service writes into this keyspace too: snapshots it deleted "
        "(its $snapshot.history cleanup keeps one fewer, its Inspect page deletes) are "
        "logged in the ledger as removed elsewhere and counted apart by ledger verify, not "
        "called tampering. Only on Cassandra: the embedded store has no other writer. See "
        "docs/java-compatibility.md.",
        _bool,
    )
    # --- garbage collection (filestore/gc.py) ---
    gc_grace: float = _setting(
        "ARCHIVE_GC_GRACE",
        86400.0,
        "Time an unreferenced file or piece stays listed before `gc` removes it; longer "
        "than any ingest (one longer than half of it re-checks what it reused). The same "
        "value for every process on one store.",
        _seconds,
    )
    gc_interval: float = _setting(
        "ARCHIVE_GC_INTERVAL",
        3600.0,
        "Time between the garbage collections `serve` runs (0: none; run `gc` instead).",
        _seconds,
    )
    census_interval: float = _setting(
        "ARCHIVE_CENSUS_INTERVAL",
        86400.0,
        "How old the store's census (pieces, stored bytes, unused files and pieces: one pass "
        "over the piece tables) may get before `serve` counts it again (0: never; run "
        "`stats --full` instead). Checked every 5 minutes.",
        _seconds,
    )
    # --- the scrub (archive/scrub.py, docs/operations.md) ---
    scrub_period: float = _setting(
        "ARCHIVE_SCRUB_PERIOD",
        30 * 86400.0,
        "The scrub reads everything stored again and checks it within this period (a "
        "cycle), a slice at a time: in `serve` every ARCHIVE_SCRUB_INTERVAL, or with "
        "`imixs-archive verify --slice`.",
        _seconds,
    )
    scrub_interval: float = _setting(
        "ARCHIVE_SCRUB_INTERVAL",
        3600.0,
        "Time between the scrub's slices in `serve` (0: none; run `imixs-archive verify "
        "--slice` from a timer instead, as often as this says: each slice checks what is "
        "due by then and one interval ahead).",
        _seconds,
    )
    scrub_rate: float = _setting(
        "ARCHIVE_SCRUB_RATE",
        20.0,
        "Megabytes per second the scrub reads at most (pieces and snapshot rows), so that "
        "it never crowds out the sync and the readers; 0: no limit.",
        _megabytes,
    )
    # --- the ledger (ledger/, docs/ledger.md) ---
    ledger_key: str = _setting(
        "ARCHIVE_LEDGER_KEY",
        "",
        "File of the ledger's Ed25519 signing key (a C2SP note key); empty: ledger.key in "
        "ARCHIVE_DATA_DIR. Created on first start when the ledger has no key yet: back it "
        "up, and give every process that signs checkpoints the same file.",
    )
    ledger_origin: str = _setting(
        "ARCHIVE_LEDGER_ORIGIN",
        "",
        "The name checkpoints carry for this archive's log (its origin line, a schema-less "
        "URL such as archive.example.com/invoices), fixed when the ledger starts; empty: "
        "the host and path of ARCHIVE_PUBLIC_URL (else ledger init asks for it).",
    )
    public_url: str = _setting(
        "ARCHIVE_PUBLIC_URL",
        "",
        "The archive's public address (https://archive.example.com/invoices): names the "
        "ledger's origin when ARCHIVE_LEDGER_ORIGIN is empty.",
    )
    ledger_checkpoint_entries: int = _setting(
        "ARCHIVE_LEDGER_CHECKPOINT_ENTRIES",
        1000,
        "A signed checkpoint at least every this many new log entries.",
        _int,
    )
    ledger_checkpoint_seconds: float = _setting(
        "ARCHIVE_LEDGER_CHECKPOINT_SECONDS",
        60.0,
        "A signed checkpoint at least this often while the log grows.",
        _seconds,
    )
    ledger_checkpoint_dir: str = _setting(
        "ARCHIVE_LEDGER_CHECKPOINT_DIR",
        "",
        "Folder (e.g. a WORM mount) every checkpoint is also written to, as a new file, with "
        "the public key; ledger verify checks the log against the newest there.",
    )
    ledger_public: bool = _setting(
        "ARCHIVE_LEDGER_PUBLIC",
        False,
        "Serve the log at /ledger/ (C2SP tlog-tiles: checkpoint, tiles, entries) to anyone, "
        "without credentials; false: to the auditor, reader and manager roles (the API's "
        "proofs always need one of them).",
        _bool,
    )
    ledger_witness_dir: str = _setting(
        "ARCHIVE_LEDGER_WITNESS_DIR",
        "",
        "The old name of ARCHIVE_LEDGER_CHECKPOINT_DIR (read when that is empty): the folder "
        "is written by the archive itself, it is no witness.",
    )
    ledger_witnesses: str = _setting(
        "ARCHIVE_LEDGER_WITNESSES",
        "",
        "Witnesses (C2SP tlog-witness, run by others) each new checkpoint is sent to with its "
        "consistency proof, for their cosignatures: a comma list of 'URL VKEY' (the "
        "witness's address and its cosignature key); empty: none.",
    )
    ledger_witness_quorum: int = _setting(
        "ARCHIVE_LEDGER_WITNESS_QUORUM",
        0,
        "Cosignatures of the configured witnesses that ledger verify requires on the "
        "ledger's last checkpoint (k of n); 0: none required.",
        _count,
    )
    ledger_interval: float = _setting(
        "ARCHIVE_LEDGER_INTERVAL",
        5.0,
        "Time between the ledger's sequencing rounds in `serve` and a running `sync` "
        "(0: none; `imixs-archive ledger checkpoint` sequences what is queued).",
        _seconds,
    )
    timezone: str = _setting(
        "ARCHIVE_TIMEZONE",
        "UTC",
        "IANA time zone (Europe/Berlin) of the days, months and years of the analytics, "
        "restore ranges and the dates the UI shows and takes; --tz / tz= override it.",
        check_zone,
    )
    graphviz_dot: str = _setting(
        "ARCHIVE_GRAPHVIZ_DOT",
        "dot",
        "Graphviz's dot program (a name looked up on the PATH, or a path), which lays out the "
        "web UI's process map as SVG; without it the page shows the map's tables and says "
        "what to install (Debian: apt-get install graphviz).",
    )
    retention: str = _setting(
        "ARCHIVE_RETENTION",
        "",
        "Retention policy (docs/retention.md): group:NAME=10y, type:NAME=90d, *=30y, counted "
        "from an instance's last snapshot; empty keeps everything.",
    )
    retention_interval: int = _setting(
        "ARCHIVE_RETENTION_INTERVAL",
        0,
        "serve applies ARCHIVE_RETENTION this often (e.g. 24h); 0: never (run "
        "imixs-archive retention yourself).",
        _millis,
    )

    # --- the workflow and the sync (reference section 8; docs/sync.md) ---
    workflow_service_endpoint: str = _setting(
        "WORKFLOW_SERVICE_ENDPOINT",
        "",
        "REST API of the Imixs-Workflow instance to sync from, e.g. http://host:8080/api.",
    )
    workflow_service_user: str = _setting(
        "WORKFLOW_SERVICE_USER", "", "Workflow user (for COOKIE: the cookie name)."
    )
    workflow_service_password: str = _setting(
        "WORKFLOW_SERVICE_PASSWORD",
        "",
        "Workflow password (for COOKIE: the cookie value).",
        secret=True,
    )
    workflow_service_authmethod: str = _setting(
        "WORKFLOW_SERVICE_AUTHMETHOD",
        "BASIC",
        "BASIC, FORM (j_security_check), COOKIE, OIDC (password grant) or JWT (a token).",
    )
    workflow_service_token: str = _setting(
        "WORKFLOW_SERVICE_TOKEN",
        "",
        "Bearer token (JWT) sent as is; used with WORKFLOW_SERVICE_AUTHMETHOD=JWT.",
        secret=True,
    )
    oidc_auth_endpoint: str = _setting(
        "OIDC_AUTH_ENDPOINT", "", "OIDC token endpoint for WORKFLOW_SERVICE_AUTHMETHOD=OIDC."
    )
    oidc_auth_client_id: str = _setting("OIDC_AUTH_CLIENT_ID", "", "OIDC client id.")
    oidc_auth_client_secret: str = _setting(
        "OIDC_AUTH_CLIENT_SECRET", "", "OIDC client secret.", secret=True
    )
    workflow_rest_connecttimeout: int = _setting(
        "WORKFLOW_REST_CONNECTTIMEOUT",
        10000,
        "Connect timeout to the workflow (e.g. 10s, 500ms). A bare number is seconds, as the "
        "Java backup service reads this name.",
        _timeout_millis,
    )
    workflow_rest_readtimeout: int = _setting(
        "WORKFLOW_REST_READTIMEOUT",
        120000,
        "Read timeout (e.g. 300s): the longest pause between two pieces of an "
        "answer. A bare number is seconds, as the Java backup service reads this name.",
        _timeout_millis,
    )
    workflow_rest_cafile: str = _setting(
        "WORKFLOW_REST_CAFILE",
        "",
        "PEM file of the CA certificates an https workflow endpoint is checked against"
        " (empty: the system's).",
    )
    workflow_sync_interval: int = _setting(
        "WORKFLOW_SYNC_INTERVAL", 5000, "Pause between sync rounds when idle.", _millis
    )
    workflow_sync_initialdelay: int = _setting(
        "WORKFLOW_SYNC_INITIALDELAY", 30000, "Delay before the first sync round.", _millis
    )
    workflow_sync_deadlock: int = _setting(
        "WORKFLOW_SYNC_DEADLOCK",
        60000,
        "A taken event not done after this is finished by any sync process (its holder "
        "died or the workflow deleted the event); also the age sent with "
        "WORKFLOW_SYNC_RELEASE.",
        _millis,
    )
    workflow_sync_release: bool = _setting(
        "WORKFLOW_SYNC_RELEASE",
        False,
        "Call the event log's release each round, as the Java service does. Off: the "
        "workflow's release deletes every locked event, also those other processes hold.",
        _bool,
    )
    workflow_sync_remove: bool = _setting(
        "WORKFLOW_SYNC_REMOVE",
        False,
        "Act on snapshot.remove events by deleting the archived snapshot. Off: the event is "
        "removed and logged, the archive keeps the snapshot (as the Java service did).",
        _bool,
    )
    workflow_sync_catchup: bool = _setting(
        "WORKFLOW_SYNC_CATCHUP",
        True,
        "Walk /snapshot/syncpoint behind the event log and archive any snapshot it missed.",
        _bool,
    )
    workflow_sync_catchup_lag: int = _setting(
        "WORKFLOW_SYNC_CATCHUP_LAG",
        300000,
        "How far the catch-up stays behind the present: longer than the workflow's "
        "longest transaction plus the clock difference between it and the archive.",
        _millis,
    )
    workflow_sync_workers: int = _setting(
        "WORKFLOW_SYNC_WORKERS", 4, "Events archived concurrently by one sync process.", _int
    )
    workflow_sync_maxattempts: int = _setting(
        "WORKFLOW_SYNC_MAXATTEMPTS",
        8,
        "Attempts at one event before it goes to the dead-letter list (a snapshot.backup "
        "event: before it is removed and logged).",
        _int,
    )
    workflow_sync_retrydelay: int = _setting(
        "WORKFLOW_SYNC_RETRYDELAY",
        10000,
        "Wait before retrying a failed event; doubles with each attempt, at most 64x.",
        _millis,
    )
    workflow_sync_batch: int = _setting(
        "WORKFLOW_SYNC_BATCH", 100, "Events read per round (maxCount).", _int
    )
    backup_service_endpoint: str = _setting(
        "BACKUP_SERVICE_ENDPOINT",
        "",
        "Set: each archived snapshot also gets a snapshot.backup event for the backup service.",
    )
    backup_mirrors: str = _setting(
        "BACKUP_MIRRORS",
        "",
        "Backup mirror names (comma or semicolon list): one snapshot.backup.<mirror> event each.",
    )
    # --- the FTPS backup target (the Java backup service's names; docs/java-compatibility.md)
    backup_ftp_host: str = _setting(
        "BACKUP_FTP_HOST", "", "FTPS server of the backup target (explicit TLS, as in Java)."
    )
    backup_ftp_port: int = _setting("BACKUP_FTP_PORT", 21, "Port of the FTPS server.", _port)
    backup_ftp_path: str = _setting(
        "BACKUP_FTP_PATH", "/", "Folder on the FTPS server holding the yyyy/MM tree (must exist)."
    )
    backup_ftp_user: str = _setting("BACKUP_FTP_USER", "", "FTPS user.")
    backup_ftp_password: str = _setting("BACKUP_FTP_PASSWORD", "", "FTPS password.", secret=True)
    backup_ftp_cafile: str = _setting(
        "BACKUP_FTP_CAFILE",
        "",
        "PEM file of the CA the FTPS server's certificate is checked against (empty: the "
        "system's).",
    )
    backup_ftp_protect_data: bool = _setting(
        "BACKUP_FTP_PROTECT_DATA",
        True,
        "Encrypt the FTPS data connections too (PROT P), each resuming the control "
        "connection's TLS session. false: the file data crosses the network in clear (PROT "
        "C), as the Java backup service sends it, for a server set up for it; warned about.",
        _bool,
    )
    backup_ftp_certificate_check: str = _setting(
        "BACKUP_FTP_CERTIFICATE_CHECK",
        "full",
        "How the FTPS server's certificate is checked: full (its chain, to BACKUP_FTP_CAFILE "
        "or the system's CAs, and the host name), chain (the chain only), or dates (only "
        "its validity dates, any issuer: the Java backup service's check). The weaker two "
        "are warned about.",
        lambda text: _choice(text, FTP_CERTIFICATE_CHECKS),
    )
    backup_ftp_timezone: str = _setting(
        "BACKUP_FTP_TIMEZONE",
        "",
        "IANA time zone of the yyyy/MM folders of the FTPS backup, as the Java backup "
        "service takes its JVM's zone (TZ) for them; empty: the offset $created carries. "
        "Beside a Java backup service, set its zone, so that one instance lands in one folder.",
        lambda text: check_zone(text) if text.strip() else "",
    )
    backup_ftp_overwrite: bool = _setting(
        "BACKUP_FTP_OVERWRITE",
        False,
        "Write a backup file again even when it holds the same or a newer snapshot.",
        _bool,
    )
    backup_mirror_id: str = _setting(
        "BACKUP_MIRROR_ID",
        "",
        "backup-events consumes snapshot.backup.<this mirror> instead of snapshot.backup.",
    )
    backup_sync_deadlock: int = _setting(
        "BACKUP_SYNC_DEADLOCK",
        60000,
        "A snapshot.backup event seen locked this long (its consumer died between lock and "
        "delete) is unlocked and backed up.",
        _millis,
    )
    backup_only: bool = _setting(
        "BACKUP_ONLY",
        False,
        "Backup only, no archive beside (the workflow emits snapshot.backup itself): serve "
        "runs no sync, and the FTPS backup takes every snapshot from the workflow.",
        _bool,
    )

    @property
    def uses_cassandra(self) -> bool:
        return bool(self.cluster_contactpoints.strip())


SETTINGS = tuple(fields(Settings))

JAVA_ONLY = {
    "ARCHIVE_CLUSTER_SSL_TRUSTSTOREPATH": "ARCHIVE_CLUSTER_SSL_CA, a PEM file of the CA "
    "(keytool -exportcert -rfc -keystore <truststore> -alias <alias>)",
    "ARCHIVE_CLUSTER_SSL_TRUSTSTOREPASSWORD": "ARCHIVE_CLUSTER_SSL_CA (a PEM file needs no "
    "password)",
    "ARCHIVE_CLUSTER_SSL_KEYSTOREPATH": "ARCHIVE_CLUSTER_SSL_CERT and ARCHIVE_CLUSTER_SSL_KEY, "
    "PEM files of the client certificate and key (keytool -importkeystore to PKCS12, then "
    "openssl pkcs12)",
    "ARCHIVE_CLUSTER_SSL_KEYSTOREPASSWORD": "ARCHIVE_CLUSTER_SSL_CERT and ARCHIVE_CLUSTER_SSL_KEY "
    "(PEM files)",
    "IMIXS_REST_CLIENT_INSECURE": "WORKFLOW_REST_CAFILE, a PEM file of the CA that signed the "
    "workflow's certificate (certificates are always verified)",
}
"""Settings of the Java services that this archive does not read, and what replaces them:
refused at start when set, so a migrated configuration does not silently change meaning."""

_JAVA_OFF = {"", "false", "0", "no", "off"}

_EXPORTER = (
    "a setting of the Java file exporter (imixs-archive-exporter, file.export events), "
    "which this archive does not replace: keep the exporter running for it"
)
JAVA_IGNORED = {
    "METRICS_ENABLED": "this archive always serves its metrics, at /metrics (to readers), "
    "the Java counters' names among them",
    "WORKFLOW_REST_JPQL_DOUBLEDECODE_WORKAROUND": "the full backup's query "
    "(backup-events --full) holds no %, and reads the same whether the workflow decodes "
    "it once or twice",
    "EVENTLOG_TOPIC": _EXPORTER,
    "EVENTLOG_DEADLOCK": _EXPORTER,
    "EXPORT_PATH": _EXPORTER,
    "EXPORT_FTP_HOST": _EXPORTER,
    "EXPORT_FTP_PORT": _EXPORTER,
    "EXPORT_FTP_USER": _EXPORTER,
    "EXPORT_FTP_PASSWORD": _EXPORTER,
}
"""Settings of the Java services that this archive does not read, harmless to leave set:
a warning at start (``serve``, ``doctor``) says so, and why."""
JVM_OPTIONS = ("JAVA_OPTS", "JAVA_TOOL_OPTIONS")
"""Where the Java services' system properties (``-DNAME=value``) are given: read here as
settings too, as MicroProfile Config reads them."""


def _system_properties(source: Mapping[str, str]) -> dict[str, str]:
    """The ``-Dname=value`` of ``JAVA_OPTS`` and ``JAVA_TOOL_OPTIONS``."""
    found: dict[str, str] = {}
    for variable in JVM_OPTIONS:
        try:
            words = shlex.split(source.get(variable, ""))
        except ValueError:
            raise ConfigError(f"{variable}: unbalanced quotes") from None
        for word in words:
            if word.startswith("-D") and "=" in word:
                name, _, value = word[2:].partition("=")
                found[name] = value
    return found


def _environment_value(source: Mapping[str, str], name: str) -> str | None:
    """The value of a setting: its name, or a MicroProfile spelling of it
    (``workflow_service_endpoint``, ``workflow.service.endpoint``), in the environment or
    as a system property of ``JAVA_OPTS`` / ``JAVA_TOOL_OPTIONS``, as the Java service
    reads them."""
    spellings = (name, name.lower(), name.lower().replace("_", "."))
    found = {spelling: source[spelling] for spelling in spellings if spelling in source}
    properties = _system_properties(source) if any(v in source for v in JVM_OPTIONS) else {}
    found.update(
        {f"-D{spelling}": properties[spelling] for spelling in spellings if spelling in properties}
    )
    if len(set(found.values())) > 1:
        raise ConfigError(
            f"{' and '.join(sorted(found))} are both set, to different values: keep one"
        )
    return next(iter(found.values()), None)


def java_warnings(env: Mapping[str, str] | None = None) -> list[str]:
    """What a configuration carried over from the Java services sets that this archive
    does not read, or reads differently: one line each, for the start of ``serve`` and
    for ``doctor``."""
    source = os.environ if env is None else env
    said = [
        f"{name} is set but not read here: {why}"
        for name, why in JAVA_IGNORED.items()
        if _environment_value(source, name) is not None
    ]
    jvm_zone = (source.get("TZ") or "").strip()
    if jvm_zone and _environment_value(source, "ARCHIVE_TIMEZONE") is None:
        said.append(
            f"TZ={jvm_zone} is set (the Java services' JVM zone: their dates without an offset "
            "and backup month folders) but not read here: days, months and ranges are UTC "
            f"unless ARCHIVE_TIMEZONE is set (e.g. ARCHIVE_TIMEZONE={jvm_zone}), and the FTPS "
            "backup's month folders follow $created's offset unless BACKUP_FTP_TIMEZONE is"
        )
    contact = _environment_value(source, "ARCHIVE_CLUSTER_CONTACTPOINTS")
    if contact and _environment_value(source, "ARCHIVE_CLUSTER_KEYSPACE") is None:
        said.append(
            "ARCHIVE_CLUSTER_KEYSPACE is not set: the keyspace is imixs_archive (the Java "
            "service refuses to start without it; beside it, set the keyspace it uses)"
        )
    consistency = ("ARCHIVE_CLUSTER_CONSISTENCY_READ", "ARCHIVE_CLUSTER_CONSISTENCY_WRITE")
    if contact and all(_environment_value(source, name) is None for name in consistency):
        said.append(LOCAL_QUORUM_NOTICE)
    return said


LOCAL_QUORUM_NOTICE = (
    "Cassandra reads and writes at LOCAL_QUORUM (ARCHIVE_CLUSTER_CONSISTENCY_READ and "
    "_WRITE; the Java service used LOCAL_ONE): with two copies per datacenter one node "
    "down stops the archive's writes, which LOCAL_ONE let through (and could lose); keep "
    "three copies (docs/cassandra.md#consistency-levels), or set both settings to say you "
    "chose"
)
"""Said at the start of ``serve`` and by ``doctor`` when the consistency is the default."""


def _check_java_names(source: Mapping[str, str]) -> None:
    for name, replacement in JAVA_ONLY.items():
        raw = _environment_value(source, name)
        if raw is None or (name == "IMIXS_REST_CLIENT_INSECURE" and raw.lower() in _JAVA_OFF):
            continue
        raise ConfigError(
            f"{name} (a setting of the Java service) is not read here: use {replacement}"
        )


def _check_cluster_without_contact_points(source: Mapping[str, str], settings: Settings) -> None:
    if settings.uses_cassandra:
        return
    named = sorted(
        name
        for spec in SETTINGS
        if (name := spec.metadata["env"]).startswith("ARCHIVE_CLUSTER_")
        and (_environment_value(source, name) or "").strip()
    )
    if named:
        raise ConfigError(
            f"{', '.join(named)} set but ARCHIVE_CLUSTER_CONTACTPOINTS is not: set the Cassandra "
            "contact points, or unset the ARCHIVE_CLUSTER_* settings to use the embedded SQLite "
            "store in ARCHIVE_DATA_DIR"
        )


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from the environment, with non-None ``overrides`` (CLI flags) on top.

    Also honours the MicroProfile spellings of the names, and refuses the Java-only settings
    (``JAVA_ONLY``) and ``ARCHIVE_CLUSTER_*`` settings without contact points.
    """
    source = os.environ if env is None else env
    _check_java_names(source)
    values: dict[str, Any] = {}
    for spec in SETTINGS:
        if overrides.get(spec.name) is not None:
            values[spec.name] = overrides[spec.name]
            continue
        raw = _environment_value(source, spec.metadata["env"])
        if raw is None:
            continue
        try:
            values[spec.name] = spec.metadata["parse"](raw)
        except ValueError as exc:
            raise ConfigError(f"{spec.metadata['env']}: {exc}") from None
    unknown = set(overrides) - {spec.name for spec in SETTINGS}
    if unknown:
        raise ConfigError(f"unknown settings: {', '.join(sorted(unknown))}")
    settings = Settings(**values)
    if overrides.get("cluster_contactpoints") is None:
        _check_cluster_without_contact_points(source, settings)
    return settings


def describe_settings() -> list[tuple[str, str, str]]:
    """(environment name, default, help) of every setting, for docs and ``--help``."""
    return [
        (
            spec.metadata["env"],
            "" if spec.metadata["secret"] else str(spec.default),
            spec.metadata["help"],
        )
        for spec in SETTINGS
    ]


_URL_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")
"""The start of a URL (``scheme:``); two letters at least, so ``C:\\store`` is a folder."""


def settings_for_store(settings: Settings, target: str) -> Settings:
    """The same settings pointed at another store: a folder (embedded store) or
    ``cassandra://host[:port][,host...]/keyspace`` (other cluster settings kept). A target
    that starts like a URL (``scheme:``) and is not that one is refused, never taken for a
    folder: ``cassandra:/ks`` would otherwise become a local store in ``./cassandra:/ks``."""
    expected = "expected a folder or cassandra://host[:port]/keyspace"
    if target.startswith("cassandra://"):
        hosts, _, keyspace = target.removeprefix("cassandra://").partition("/")
        if not hosts or not keyspace or "/" in keyspace:
            raise ConfigError(f"{expected}, got {target!r}")
        return replace(settings, cluster_contactpoints=hosts, cluster_keyspace=keyspace)
    if _URL_LIKE.match(target):
        raise ConfigError(
            f"{expected}, got {target!r} (a folder whose name has a colon: write ./{target})"
        )
    if not target.strip():
        raise ConfigError("no target store given")
    return replace(settings, cluster_contactpoints="", data_dir=Path(target))


def same_store(one: Settings, other: Settings) -> bool:
    """Whether both settings name one store: the same folder (however spelled), or the
    same keyspace over a contact point they share (``host`` is ``host:9042``)."""
    if one.uses_cassandra or other.uses_cassandra:
        return (
            one.uses_cassandra
            and other.uses_cassandra
            and one.cluster_keyspace == other.cluster_keyspace
            and bool(_contact_points(one) & _contact_points(other))
        )
    return one.data_dir.resolve() == other.data_dir.resolve()


def _contact_points(settings: Settings) -> set[str]:
    points = (p.strip().lower() for p in settings.cluster_contactpoints.split(","))
    return {p if ":" in p else f"{p}:9042" for p in points if p}
