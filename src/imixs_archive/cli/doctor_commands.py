"""``doctor``: is this archive set up to run beside (or instead of) the Java service?

Checks the configuration, the store (and SQLite's own check of its file, with the way out
of damage there), the workflow connection and its credentials, and the accounts the
workflow needs to read files back; then says what to set on the workflow side. The
workflow's ``ArchiveRemoteService`` (imixs-archive-api) fetches attachments with
``GET <ARCHIVE_SERVICE_ENDPOINT>/archive/md5/<MD5>`` as ``ARCHIVE_SERVICE_USER`` with HTTP
Basic: this archive needs that user to be a reader.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.store_damage import damaged_tables, way_out
from imixs_archive.cli.context import Context, store_options
from imixs_archive.cli.output import print_json
from imixs_archive.config import Settings, java_warnings
from imixs_archive.errors import ArchiveError, NotFoundError
from imixs_archive.jsonable import Jsonable
from imixs_archive.recovery.ftps_tls import tls_warnings
from imixs_archive.web.credentials import Role, parse_tokens, parse_users, verify_password
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import WorkflowAuthError, WorkflowUnavailableError

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass(frozen=True)
class Check(Jsonable):
    area: str
    status: str
    message: str


@dataclass
class Diagnosis(Jsonable):
    JSON_EXTRA = ("failed",)

    checks: list[Check] = field(default_factory=list)
    workflow_side: list[str] = field(default_factory=list)
    """``NAME=value`` lines for the workflow's environment."""

    @property
    def failed(self) -> bool:
        return any(check.status == FAIL for check in self.checks)

    def add(self, area: str, status: str, message: str) -> None:
        self.checks.append(Check(area, status, message))


def diagnose(
    settings: Settings,
    open_archive: Callable[[], Archive],
    *,
    public_url: str | None = None,
    archive_user: str | None = None,
    archive_password: str | None = None,
) -> Diagnosis:
    """Every check; ``archive_user``/``archive_password`` are the account the workflow is
    (or will be) given as ``ARCHIVE_SERVICE_USER``/``PASSWORD``, checked when given."""
    found = Diagnosis()
    _configuration(settings, found)
    _store(open_archive, found)
    _workflow(settings, found)
    reader = _archive_account(settings, found, archive_user, archive_password)
    endpoint = (public_url or _guess_url(settings)).rstrip("/") + "/api"
    found.workflow_side = [
        f"ARCHIVE_SERVICE_ENDPOINT={endpoint}",
        f"ARCHIVE_SERVICE_USER={reader or '<a reader of ARCHIVE_USERS>'}",
        "ARCHIVE_SERVICE_PASSWORD=<that user's password>",
        "ARCHIVE_SERVICE_AUTHMETHOD=BASIC",
    ]
    return found


def _configuration(settings: Settings, found: Diagnosis) -> None:
    if settings.uses_cassandra:
        where = f"Cassandra {settings.cluster_contactpoints}, keyspace {settings.cluster_keyspace}"
    else:
        where = f"the embedded SQLite store in {settings.data_dir}"
    found.add("configuration", OK, f"settings read; the archive is {where}")
    if not settings.workflow_service_endpoint.strip():
        found.add(
            "configuration",
            WARN,
            "WORKFLOW_SERVICE_ENDPOINT is not set: nothing is synced from a workflow",
        )
    backup_events = settings.backup_service_endpoint.strip() or settings.backup_only
    if settings.backup_ftp_host.strip() and not backup_events:
        found.add(
            "configuration",
            WARN,
            "BACKUP_FTP_HOST is set but BACKUP_SERVICE_ENDPOINT is not: the sync emits no "
            "snapshot.backup events, so nothing new reaches the FTPS backup (with a "
            "workflow that emits them itself, set BACKUP_ONLY=true)",
        )
    if settings.backup_only and not settings.backup_ftp_host.strip():
        found.add(
            "configuration",
            WARN,
            "BACKUP_ONLY is set but BACKUP_FTP_HOST is not: serve runs no sync and backs "
            "up nothing",
        )
    for line in tls_warnings(settings) if settings.backup_ftp_host.strip() else ():
        found.add("configuration", WARN, line)
    for line in java_warnings():
        found.add("configuration", WARN, line)


def _store(open_archive: Callable[[], Archive], found: Diagnosis) -> None:
    try:
        archive = open_archive()
    except NotFoundError as exc:  # no archive there: said, not created
        found.add("store", FAIL, f"{exc}; the first import, sync or serve creates one")
        return
    except ArchiveError as exc:
        found.add("store", FAIL, str(exc))
        return
    try:
        state = archive.state.load()
    except ArchiveError as exc:
        found.add("store", FAIL, str(exc))
    else:
        found.add(
            "store",
            OK,
            f"reachable; syncpoint {state.get_first('sync.point', 0)}, "
            f"{state.get_first('sync.count', 0)} snapshots synced",
        )
    _store_file(archive, found)


def _store_file(archive: Archive, found: Diagnosis) -> None:
    """The store's own check of its file (SQLite's quick_check; Cassandra's nodes check
    their own), with the way out of damage (``archive/store_damage.py``)."""
    if archive.storage.name != "sqlite":
        return
    try:
        problems = archive.storage.file_problems()
    except ArchiveError as exc:
        found.add("store file", FAIL, f"cannot be checked: {exc}")
        return
    if not problems:
        found.add("store file", OK, "SQLite's check of archive.db found no damage")
        return
    tables = damaged_tables(problems)
    found.add(
        "store file",
        FAIL,
        f"archive.db is damaged in {', '.join(tables)} ({len(problems)} problem(s), e.g. "
        f"{problems[0]}): {'; '.join(way_out(tables))}",
    )


def _workflow(settings: Settings, found: Diagnosis) -> None:
    endpoint = settings.workflow_service_endpoint.strip()
    if not endpoint:
        return
    who = settings.workflow_service_user or "no user"
    method = settings.workflow_service_authmethod.upper()
    try:
        with WorkflowClient.from_settings(settings) as client:
            waiting = len(client.read_events(max_count=100))
            with contextlib.suppress(NotFoundError):  # no such document: reading is allowed
                client.get_document("00000000-doctor-probe", ["$uniqueid"])
    except WorkflowAuthError as exc:
        found.add(
            "workflow",
            FAIL,
            f"{endpoint} refused {who} ({method}): {exc}; check WORKFLOW_SERVICE_USER, "
            "WORKFLOW_SERVICE_PASSWORD and WORKFLOW_SERVICE_AUTHMETHOD",
        )
        return
    except WorkflowUnavailableError as exc:
        found.add("workflow", FAIL, f"cannot reach {endpoint}: {exc}")
        return
    except ArchiveError as exc:
        found.add("workflow", FAIL, f"{endpoint}: {exc}")
        return
    more = "100 or more" if waiting >= 100 else str(waiting)
    found.add(
        "workflow", OK, f"{endpoint} answers {who} ({method}); {more} snapshot events waiting"
    )


def _archive_account(
    settings: Settings, found: Diagnosis, user: str | None, password: str | None
) -> str | None:
    """The reader the workflow should use (checked when given); None when there is none."""
    try:
        users = parse_users(settings.users)
        tokens = parse_tokens(settings.api_tokens)
    except ArchiveError as exc:
        found.add("archive access", FAIL, str(exc))
        return None
    if not users and not tokens and not settings.oidc_issuer:
        found.add(
            "archive access",
            WARN,
            "no credentials are configured: the service answers on loopback only, so a "
            "workflow on another host cannot read files back; add a reader to ARCHIVE_USERS "
            "(imixs-archive hash-password --role reader)",
        )
    elif _is_loopback(settings.http_host):
        found.add(
            "archive access",
            WARN,
            f"ARCHIVE_HTTP_HOST is {settings.http_host}: only a workflow on this host reaches "
            "the archive",
        )
    if user is not None:
        account = users.get(user)
        if account is None:
            found.add("archive access", FAIL, f"{user!r} is not a user of ARCHIVE_USERS")
        elif password is not None and not verify_password(password, account.password_hash):
            found.add("archive access", FAIL, f"the password given for {user!r} is wrong")
        else:
            checked = "password checked" if password is not None else "password not checked"
            found.add("archive access", OK, f"{user!r} may read files ({account.role}; {checked})")
        return user
    readers = sorted(name for name, u in users.items() if u.role is Role.READER)
    anyone = readers or sorted(users)
    if users:
        found.add(
            "archive access",
            OK,
            f"users who may read files: {', '.join(sorted(users))} (a reader is enough; "
            "the workflow must use BASIC: FORM logins are a JSF feature this archive lacks)",
        )
    return anyone[0] if anyone else None


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guess_url(settings: Settings) -> str:
    host = settings.http_host.strip("[]")
    if host in ("0.0.0.0", "::", ""):
        host = socket.getfqdn()
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.http_port}"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor",
        parents=[store_options()],
        help="check configuration, store and workflow; say what to set on the workflow side",
    )
    p.add_argument(
        "--public-url",
        help="the URL the workflow reaches this archive at (default: from ARCHIVE_HTTP_HOST/PORT)",
    )
    p.add_argument("--archive-user", help="the ARCHIVE_SERVICE_USER the workflow uses: checked")
    p.add_argument(
        "--archive-password-stdin",
        action="store_true",
        help="read that user's password from standard input and check it",
    )
    p.add_argument("--json", action="store_true", help="the checks as JSON")
    p.set_defaults(handler=cmd_doctor, reads_only=True)  # "no archive here" is a finding


def cmd_doctor(args: argparse.Namespace, ctx: Context) -> int:
    password = None
    if args.archive_password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    found = diagnose(
        ctx.settings,
        lambda: ctx.archive,
        public_url=args.public_url,
        archive_user=args.archive_user,
        archive_password=password,
    )
    if args.json:
        print_json(found.to_json())
        return 1 if found.failed else 0
    for check in found.checks:
        print(f"{check.status:>4}  {check.area}: {check.message}")
    print()
    print("On the workflow side (imixs-archive-api), set:")
    for line in found.workflow_side:
        print(f"  {line}")
    print(
        "The workflow then reads attachments back with GET <ARCHIVE_SERVICE_ENDPOINT>"
        "/archive/md5/<MD5> as that user."
    )
    return 1 if found.failed else 0
