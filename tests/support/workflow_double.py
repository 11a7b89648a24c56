"""A test double of Imixs-Workflow's REST API (section 4 of the reference), over real HTTP.

It serves on 127.0.0.1 with an ephemeral port and holds everything in memory:

* documents and snapshots: :meth:`WorkflowDouble.save` stores a workitem the way the
  workflow does (``$modified``, ``$created``, a snapshot ``<uniqueid>-<millis>`` of type
  ``snapshot-<type>``, ``$snapshotid`` on the workitem) and writes a ``snapshot.add``
  event; :meth:`remove_snapshot` writes ``snapshot.remove`` (the engine never does: a model
  could);
* the event log as the workflow's code behaves (``wf-engine/EventLogService.java``,
  ``wf-rs/EventLogRestService.java``; ``java-compat-audit.md`` section 4): read by topics
  (``~``, exact topic match); ``lock`` answers 200 and appends ``.lock`` every time (a
  second lock gives ``<topic>.lock.lock``: the lock is not exclusive), 500 for a missing
  entry; ``unlock`` strips the last ``.lock``, 500 for an entry that is missing or not
  locked; ``release/{ms}/{topics}`` **deletes** every entry whose topic is
  ``<topic>.lock`` whatever its age (the lock date is never persisted); ``DELETE`` and
  ``PUT`` answer 204 (also for a missing entry);
* ``GET /documents/{id}`` (``<data><document>``, optionally ``?items=a,b``), 404 when the
  document is gone; ``DELETE /documents/{id}`` of a workitem deletes every snapshot of it
  and writes no event (:meth:`WorkflowDouble.delete`);
* ``GET /documents/jpql/{query}`` (``pageSize``, ``pageIndex``, ``items``) for the full
  backup's query only (``FULL_BACKUP_JPQL``): the workitems by ``$created`` and id;
* ``GET /snapshot/syncpoint/{millis}``: every snapshot with the smallest ``$modified``
  later than ``millis``; an empty ``<data/>`` (200) when there is none, **500** when more
  than 16 share that timestamp;
* ``POST /snapshot`` (``SnapshotRestService.postSnapshot``): stores the snapshot unless it
  has it already (then with ``$modified`` stamped anew, as every save does), rebuilds the
  workitem from it (file contents emptied, ``$snapshotid``), writes a ``snapshot.add``
  event for it, and answers 200 with the workitem; 401 for a user who is not a manager,
  400 for XML it cannot read, 406 with ``$error_code`` ``INVALID_PARAMETER`` for an id
  that is not a UUID (or an old-style id); a type without ``snapshot-`` passes;
* ``PUT /eventlog/{topic}/{ref}``: 204, the body's items kept as the entry's ``data``
  (one map, as the engine's ``EventLog.data``); 400 for an empty XML body, 415 for a body
  of another type;
* authentication: ``BASIC``, ``FORM`` (``j_security_check``, ``JSESSIONID``, sessions that
  expire and then get the login page), ``COOKIE``, ``OIDC`` (token endpoint with password
  and refresh grants, tokens that expire) and ``JWT`` (one fixed bearer token);
* faults, injected per path: status codes (5xx), timeouts, connection resets mid-body,
  truncated or malformed XML, slow bodies, dropped connections.

``WorkflowDouble(documented=True)`` behaves as the event log is *documented* instead
(reference section 4 before its correction): a second lock answers 409, a missing entry
404, release unlocks entries locked longer than N ms, syncpoint answers at most 16.
:class:`JavaArchiveBeside` plays a Java archive sharing the workflow.
``tests/engine/test_engine.py`` checks the default answers against the real engine.
"""

from __future__ import annotations

import base64
import bisect
import datetime as dt
import hashlib
import json
import random
import re
import secrets
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import DocumentError
from support.http_handler import LoopbackHandler

API = "/api"
TOKEN_PATH = "/oidc/token"
SYNCPOINT_LIMIT = 16
FULL_BACKUP_JPQL = (
    "SELECT document FROM Document AS document WHERE (document.type IS NULL OR "
    "SUBSTRING(document.type, 1, 9) <> 'snapshot-') "
    "ORDER BY document.created ASC, document.id ASC"
)
"""The JPQL query of the full backup (``recovery/full_backup.py``), the one the double
answers."""
UID_PATTERN = re.compile(
    r"[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}(-[0-9]{13,15})?"
    r"|[0-9a-f]{8}-.*|[0-9a-f]{11}-.*"
)
"""The ids the engine's ``DocumentService.save`` accepts (a UUID, a snapshot id, or an
old-style id); any other is refused with ``INVALID_PARAMETER``."""
LOGIN_PAGE = (
    b"<html><body><form method='POST' action='j_security_check'>"
    b"<input name='j_username'/><input name='j_password' type='password'/></form></body></html>"
)
CONTROL = "/_double/"
"""Paths outside the API for a double in another process (benchmarks): ``stats`` (GET)
and ``wipe`` (POST: the workflow loses its data and the counts start again)."""
FAULT_KINDS = ("status", "timeout", "reset", "truncate", "malformed", "slow", "drop")
Reply = tuple[int, dict[str, str], bytes]


@dataclass
class LogEntry:
    """One event log entry as the workflow keeps it."""

    id: str
    topic: str
    ref: str
    created: dt.datetime
    seq: int
    locked_at: float = 0.0
    data: dict[str, list[Any]] = field(default_factory=dict)
    """The items of the document the entry was created with (``PUT``), kept as one map."""

    def document(self) -> Document:
        fields = {"id": self.id, "topic": self.topic, "ref": self.ref, "created": self.created}
        return Document({**fields, "data": [self.data]} if self.data else fields)


@dataclass
class Fault:
    """``kind`` on requests whose path (below the server root) matches ``path``."""

    kind: str
    path: str = r"^/api/documents/"
    method: str | None = None
    times: int | None = None
    probability: float = 1.0
    status: int = 500
    delay: float = 1.0
    hits: int = 0

    def matches(self, method: str, path: str, rng: random.Random) -> bool:
        if self.method is not None and self.method != method:
            return False
        if not re.search(self.path, path) or (self.times is not None and self.times <= 0):
            return False
        return self.probability >= 1.0 or rng.random() < self.probability


@dataclass
class Stats:
    requests: int = 0
    posts: int = 0
    documents: int = 0
    locks: int = 0
    conflicts: int = 0
    released: int = 0
    syncpoints: int = 0
    queries: int = 0
    syncpoint_overflows: int = 0
    logins: int = 0
    restored: dict[str, int] = field(default_factory=dict)
    """Snapshot id -> how often ``POST /snapshot`` received it."""
    grants: dict[str, int] = field(default_factory=lambda: {"password": 0, "refresh_token": 0})


def _millis(when: dt.datetime) -> int:
    return int(when.timestamp() * 1000)


def _at(millis: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC)


def file_entry(content: bytes, content_type: str = "application/octet-stream") -> list[Any]:
    attributes = {"md5checksum": [hashlib.md5(content).hexdigest().upper()], "size": [len(content)]}
    return [content_type, content, attributes]


class WorkflowDouble:
    """The workflow's REST API in memory. Use as a context manager, or start()/stop()."""

    def __init__(
        self,
        *,
        auth: str | None = None,
        user: str = "archive",
        password: str = "s3cret",
        manager: bool = True,
        token: str = "jwt-token-for-the-archive",
        client_id: str = "imixs-archive",
        client_secret: str = "client-secret",
        session_seconds: float = 3600.0,
        token_seconds: float = 300.0,
        seed: int = 0,
        documented: bool = False,
    ) -> None:
        self.documented = documented
        self.auth = auth.upper() if auth else None
        self.user, self.password, self.manager, self.token = user, password, manager, token
        self.client_id, self.client_secret = client_id, client_secret
        self.session_seconds, self.token_seconds = session_seconds, token_seconds
        self.rng = random.Random(seed)
        self.lock = threading.RLock()
        self.workitems: dict[str, Document] = {}
        self.snapshots: dict[str, Document] = {}
        self._xml: dict[str, bytes] = {}
        self.log: dict[str, LogEntry] = {}
        self.faults: list[Fault] = []
        self.delays: dict[str, float] = {}
        """Seconds each API request of a method (``GET``, ``POST``) waits before it is
        answered: a workflow that takes its time (requests wait in parallel)."""
        self.stats = Stats()
        self._sessions: dict[str, float] = {}
        self._tokens: dict[str, float] = {}
        self._refresh: dict[str, float] = {}
        self._seq = 0
        self._clock = 0
        self._by_modified: list[tuple[int, str]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle --------------------------------------------------------------------

    def start(self, port: int = 0) -> WorkflowDouble:
        handler = type("Handler", (_Handler,), {"double": self})
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        server.daemon_threads = True
        server.handle_error = lambda *_: None  # type: ignore[method-assign]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> WorkflowDouble:
        return self if self._server else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The ``WORKFLOW_SERVICE_ENDPOINT``."""
        return f"http://127.0.0.1:{self.port}{API}"

    @property
    def token_url(self) -> str:
        """The ``OIDC_AUTH_ENDPOINT``."""
        return f"http://127.0.0.1:{self.port}{TOKEN_PATH}"

    # ---- what the workflow app does ---------------------------------------------------

    def _next_millis(self, wanted: int | None) -> int:
        if wanted is not None:
            return wanted
        self._clock = max(self._clock + 1, int(time.time() * 1000))
        return self._clock

    def save_cases(self, count: int, *, shared: int, own: int, seed: int = 1) -> list[Document]:
        """``count`` workitems ``case N``; two of every three carry a file of ``shared``
        bytes they all share and one of their own, of up to ``own`` bytes."""
        rng = random.Random(seed)
        common = rng.randbytes(shared)
        snapshots = []
        for n in range(count):
            files = {"shared.pdf": common, f"own-{n}.bin": rng.randbytes(rng.randrange(1, own))}
            snapshots.append(self.save(subject=f"case {n}", files=files if n % 3 else None))
        return snapshots

    def save(
        self,
        doc: Document | None = None,
        *,
        files: dict[str, bytes] | None = None,
        modified: dt.datetime | int | None = None,
        event: bool = True,
        **items: Any,
    ) -> Document:
        """Save a workitem: a snapshot and (by default) a ``snapshot.add`` event. Returns
        the snapshot. ``modified`` forces ``$modified`` (epoch millis or a datetime)."""
        work = doc.copy() if doc is not None else Document()
        for name, value in items.items():
            work[name] = value
        if files is not None:
            work["$file"] = [{name: file_entry(content) for name, content in files.items()}]
            work["$file.names"] = list(files)
            work["$file.count"] = len(files)
        with self.lock:
            uid = str(work.get_first("$uniqueid") or uuid.uuid4())
            wanted = _millis(modified) if isinstance(modified, dt.datetime) else modified
            millis = self._next_millis(wanted)
            while f"{uid}-{millis}" in self.snapshots:
                millis += 1
            work["$uniqueid"] = uid
            work["$modified"] = _at(millis if wanted is None else wanted)
            if "$created" not in work:
                work["$created"] = _at(millis)
            work.setdefault("type", ["workitem"])
            snapshot = work.copy()
            snapshot_id = f"{uid}-{millis}"
            snapshot["$uniqueid"] = snapshot_id
            snapshot["type"] = f"snapshot-{work.get_first('type')}"
            snapshot["$immutable"] = True
            snapshot["$noindex"] = True
            snapshot.pop("$snapshotid", None)
            work["$snapshotid"] = snapshot_id
            self.workitems[uid] = work
            self._put_snapshot(snapshot)
            if event:
                self.put_event("snapshot.add", snapshot_id)
            return snapshot

    def _put_snapshot(self, snapshot: Document) -> None:
        snapshot_id = str(snapshot.get_first("$uniqueid"))
        self.snapshots[snapshot_id] = snapshot
        modified = snapshot.get_first("$modified")
        if isinstance(modified, dt.datetime):
            bisect.insort(self._by_modified, (_millis(modified), snapshot_id))
        self._xml[snapshot_id] = to_xml(snapshot, collection=True)

    def wipe(self) -> None:
        """The workflow lost its data: every workitem and snapshot (the event log stays)."""
        with self.lock:
            self.workitems.clear()
            self.snapshots.clear()
            self._xml.clear()

    def _control(self, what: str, method: str) -> Reply:
        with self.lock:
            if what == "wipe" and method == "POST":
                self.wipe()
                self.stats = Stats()
                return 204, {}, b""
            if what == "stats" and method == "GET":
                restored = self.stats.restored
                return _json(
                    200,
                    {
                        "requests": self.stats.requests,
                        "posts": self.stats.posts,
                        "snapshots_posted": len(restored),
                        "most_posts_of_one": max(restored.values(), default=0),
                        "workitems": len(self.workitems),
                    },
                )
        return 404, {}, b""

    def delete(self, uniqueid: str) -> None:
        """``DELETE /documents/{id}`` of a workitem: the engine's SnapshotService deletes
        every snapshot of it too, and nothing writes an event (its ``snapshot.add`` events
        stay; their documents then answer 404)."""
        with self.lock:
            self.workitems.pop(uniqueid, None)
            for sid in [s for s in self.snapshots if s.rsplit("-", 1)[0] == uniqueid]:
                self.snapshots.pop(sid)
                self._xml.pop(sid, None)

    def remove_snapshot(self, snapshot_id: str, *, event: bool = True) -> None:
        """The workflow dropped a snapshot: a ``snapshot.remove`` event for the archive."""
        with self.lock:
            self.snapshots.pop(snapshot_id, None)
            self._xml.pop(snapshot_id, None)
            if event:
                self.put_event("snapshot.remove", snapshot_id)

    def put_event(self, topic: str, ref: str, data: dict[str, list[Any]] | None = None) -> LogEntry:
        with self.lock:
            self._seq += 1
            now = dt.datetime.now(dt.UTC)
            entry = LogEntry(str(uuid.uuid4()), topic, ref, now, self._seq, data=data or {})
            self.log[entry.id] = entry
            return entry

    def events(self, topic: str | None = None) -> list[LogEntry]:
        with self.lock:
            entries = sorted(self.log.values(), key=lambda e: e.seq)
        return [e for e in entries if topic is None or e.topic == topic]

    def inject(self, kind: str, path: str = r"^/api/documents/", **options: Any) -> Fault:
        """Add a fault: ``status`` (``status=503``), ``timeout`` (no answer for ``delay``
        s), ``reset`` (RST mid-body), ``truncate`` and ``malformed`` (complete answers of
        broken XML), ``slow`` (body trickles over ``delay`` s), ``drop`` (connection closed
        without an answer). ``times=n`` limits it, ``probability=p`` makes it random."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}")
        fault = Fault(kind, path, **options)
        with self.lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self.lock:
            self.faults.clear()

    def _fault_for(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(method, path, self.rng):
                    fault.hits += 1
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None

    # ---- authentication -----------------------------------------------------------------

    def _authorised(self, headers: Any) -> Reply | None:
        """None when the request may pass, else the answer that refuses it."""
        method = self.auth
        if method is None:
            return None
        authorization = headers.get("Authorization", "")
        cookies = _cookies(headers.get("Cookie", ""))
        now = time.monotonic()
        with self.lock:
            if method == "BASIC":
                pair = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
                ok = authorization == f"Basic {pair}"
            elif method == "FORM":
                ok = self._sessions.get(cookies.get("JSESSIONID", ""), 0.0) > now
                if not ok:
                    return 200, {"Content-Type": "text/html;charset=UTF-8"}, LOGIN_PAGE
            elif method == "COOKIE":
                ok = cookies.get(self.user) == self.password
            elif method == "OIDC":
                ok = self._tokens.get(authorization.removeprefix("Bearer "), 0.0) > now
            else:  # JWT
                ok = authorization == f"Bearer {self.token}"
        if ok:
            return None
        return 401, {"WWW-Authenticate": 'Basic realm="imixs"'}, b""

    def expire_sessions(self) -> None:
        """Every FORM session and OIDC access token expires now."""
        with self.lock:
            self._sessions.clear()
            self._tokens.clear()

    def _login(self, form: dict[str, str]) -> Reply:
        if form.get("j_username") != self.user or form.get("j_password") != self.password:
            return 200, {"Content-Type": "text/html"}, b"<html>login failed</html>"
        session = secrets.token_hex(16)
        with self.lock:
            self._sessions[session] = time.monotonic() + self.session_seconds
            self.stats.logins += 1
        return 200, {"Set-Cookie": f"JSESSIONID={session}; Path=/; HttpOnly"}, b""

    def _grant(self, form: dict[str, str]) -> Reply:
        if form.get("client_id") != self.client_id or (
            form.get("client_secret") != self.client_secret
        ):
            return _json(401, {"error": "invalid_client"})
        grant = form.get("grant_type", "")
        now = time.monotonic()
        with self.lock:
            if grant == "password":
                if form.get("username") != self.user or form.get("password") != self.password:
                    return _json(401, {"error": "invalid_grant"})
            elif grant == "refresh_token":
                if self._refresh.pop(form.get("refresh_token", ""), 0.0) <= now:
                    return _json(400, {"error": "invalid_grant"})
            else:
                return _json(400, {"error": "unsupported_grant_type"})
            self.stats.grants[grant] += 1
            access, refresh = secrets.token_hex(16), secrets.token_hex(16)
            self._tokens[access] = now + self.token_seconds
            self._refresh[refresh] = now + 10 * self.token_seconds
        answer = {
            "access_token": access,
            "expires_in": self.token_seconds,
            "refresh_token": refresh,
            "refresh_expires_in": 10 * self.token_seconds,
            "token_type": "Bearer",
        }
        return _json(200, answer)

    # ---- the REST API ---------------------------------------------------------------------

    def route(
        self, method: str, path: str, query: dict[str, str], body: bytes, content_type: str = ""
    ) -> Reply:
        parts = [unquote(p) for p in path.removeprefix(API).strip("/").split("/")]
        head = parts[0] if parts else ""
        if head == "eventlog":
            if method == "PUT" and content_type and "xml" not in content_type:
                return 415, {}, b""  # the resource reads an XML document
            if method == "PUT" and content_type and not body.strip():
                return 400, {}, b""  # an XML body that is empty cannot be read
            return self._eventlog(method, parts[1:], query, body)
        if head == "documents" and method == "GET" and len(parts) == 2:
            return self._document(parts[1], query.get("items"))
        if head == "documents" and method == "GET" and len(parts) == 3 and parts[1] == "jpql":
            return self._jpql(parts[2], query)
        if head == "documents" and method == "DELETE" and len(parts) == 2:
            self.delete(parts[1])
            return 200, {}, b""  # as the engine's DocumentRestService answers
        if head == "snapshot" and method == "GET" and len(parts) == 3 and parts[1] == "syncpoint":
            return self._syncpoint(int(parts[2]))
        if head == "snapshot" and method == "POST" and len(parts) == 1:
            return self._restore(body)
        return 404, {}, b""

    def _eventlog(
        self, method: str, parts: list[str], query: dict[str, str], body: bytes = b""
    ) -> Reply:
        done: Reply = (200, {}, b"") if self.documented else (204, {}, b"")
        with self.lock:
            if method == "POST" and len(parts) == 3 and parts[0] == "release":
                self.release(parts[2].split("~"), int(parts[1]))
                return done
            if method == "POST" and len(parts) == 2 and parts[0] in ("lock", "unlock"):
                return self._lock(parts[0], self.log.get(parts[1]))
            if method == "DELETE" and len(parts) == 1:
                gone = self.log.pop(parts[0], None)
                return (404, {}, b"") if gone is None and self.documented else done
            if method == "PUT" and len(parts) == 2:  # the body's items become its data
                items = read_xml(body)[0] if body.strip() else Document()
                self.put_event(parts[0], parts[1], dict(items))
                return done
            if method == "GET" and len(parts) == 1:
                topics = parts[0].split("~")
                count = int(query.get("maxCount", "99"))
                found = [e for e in self.events() if e.topic in topics][:count]
                return _xml(to_xml([e.document() for e in found], collection=True))
        return 404, {}, b""

    def _lock(self, action: str, entry: LogEntry | None) -> Reply:
        """The real workflow: lock always succeeds (``.lock`` appended again), a missing
        entry or unlocking one that is not locked throws (500)."""
        if entry is None:
            return (404, {}, b"") if self.documented else (500, {}, b"internal error")
        if action == "unlock":
            if not entry.topic.endswith(".lock"):
                return (200, {}, b"") if self.documented else (500, {}, b"internal error")
            entry.topic, entry.locked_at = entry.topic.removesuffix(".lock"), 0.0
            return 200, {}, b""
        self.stats.locks += 1
        if entry.topic.endswith(".lock"):
            self.stats.conflicts += 1
            if self.documented:
                return 409, {}, b""
        entry.topic, entry.locked_at = entry.topic + ".lock", time.monotonic()
        return 200, {}, b""

    def release(self, topics: list[str], millis: int = 0) -> int:
        """``releaseDeadLocks``: every entry whose topic is ``<topic>.lock`` is deleted,
        whatever its age (documented: unlocked when locked longer than ``millis``).
        Entries locked twice (``.lock.lock``) are not found by it. How many."""
        limit = time.monotonic() - millis / 1000
        hit = 0
        with self.lock:
            for entry in list(self.log.values()):
                base = entry.topic.removesuffix(".lock")
                if not entry.topic.endswith(".lock") or base not in topics:
                    continue
                if not self.documented:
                    del self.log[entry.id]
                    hit += 1
                elif entry.locked_at <= limit:
                    entry.topic, entry.locked_at = base, 0.0
                    hit += 1
            self.stats.released += hit
        return hit

    def _document(self, uid: str, items: str | None) -> Reply:
        with self.lock:
            self.stats.documents += 1
            xml = self._xml.get(uid)
            doc = self.snapshots.get(uid) or self.workitems.get(uid)
        if doc is None:
            return 404, {}, b""
        if items:
            wanted = [name.strip() for name in items.split(",")]
            doc = Document({name: doc.get_values(name) for name in wanted if name in doc})
            return _xml(to_xml(doc, collection=True))
        return _xml(xml if xml is not None else to_xml(doc, collection=True))

    def _jpql(self, statement: str, query: dict[str, str]) -> Reply:
        """``GET /documents/jpql/{query}`` for the one query the full backup asks (every
        document that is not a snapshot, by ``created`` and ``id``): a page of the
        workitems with ``items`` only; any other query is the engine failing on it (500)."""
        if " ".join(statement.split()) != FULL_BACKUP_JPQL:
            return 500, {"Content-Type": "text/plain"}, b"query not known to the double"
        size, index = int(query.get("pageSize", "-1")), int(query.get("pageIndex", "0"))
        with self.lock:
            self.stats.queries += 1
            found = sorted(self.workitems.values(), key=_created_order)
        page = found[index * size : (index + 1) * size] if size > 0 else found
        wanted = [n.strip() for n in query["items"].split(",")] if query.get("items") else None
        if wanted is not None:
            page = [Document({n: d.get_values(n) for n in wanted if n in d}) for d in page]
        return _xml(to_xml(page, collection=True))

    def _syncpoint(self, after: int) -> Reply:
        with self.lock:
            self.stats.syncpoints += 1
            ids = self._first_after(after)
            if not ids:
                return _xml(to_xml([], collection=True))
            if len(ids) > SYNCPOINT_LIMIT:
                if not self.documented:  # SnapshotException: "Sync is not possible."
                    self.stats.syncpoint_overflows += 1
                    return 500, {"Content-Type": "text/plain"}, b"more than 16 snapshots"
                ids = ids[:SYNCPOINT_LIMIT]
            if len(ids) == 1 and ids[0] in self._xml:
                return _xml(self._xml[ids[0]])  # the same <data><document>, kept written
            docs = [self.snapshots[sid] for sid in ids]
        return _xml(to_xml(docs, collection=True))

    def _first_after(self, after: int) -> list[str]:
        """The snapshots sharing the smallest ``$modified`` later than ``after`` (an index
        by ``$modified``, as the workflow's database has; entries of snapshots removed
        since are skipped)."""
        index = self._by_modified
        first: int | None = None
        ids: list[str] = []
        for millis, sid in index[bisect.bisect_right(index, (after, "\uffff")) :]:
            if first is not None and millis > first:
                break
            snapshot = self.snapshots.get(sid)
            if snapshot is None or _millis(snapshot.get_first("$modified")) != millis:
                continue
            first = millis
            if sid not in ids:
                ids.append(sid)
        return sorted(ids)

    def _restore(self, body: bytes) -> Reply:
        if not self.manager:
            return 401, {}, b""
        try:
            docs = read_xml(body)
        except DocumentError as exc:
            return 400, {"Content-Type": "text/plain"}, str(exc).encode()
        if len(docs) != 1:
            return 400, {"Content-Type": "text/plain"}, b"expected one document"
        snapshot = docs[0]
        sid = str(snapshot.get_first("$uniqueid", "")) or str(uuid.uuid4())
        if not UID_PATTERN.fullmatch(sid):
            return _refuse("INVALID_PARAMETER", f"invalid UUID pattern - {sid}")
        with self.lock:
            now = _at(self._next_millis(None))
            if sid not in self.snapshots:
                stored = snapshot.copy()
                stored["$uniqueid"], stored["$modified"] = sid, now
                self._put_snapshot(stored)
            work = _rebuilt_workitem(snapshot, sid, now)
            self.workitems[str(work.get_first("$uniqueid"))] = work
            self.put_event("snapshot.add", sid)
            self.stats.restored[sid] = self.stats.restored.get(sid, 0) + 1
        return _xml(to_xml(work, collection=True))


def _rebuilt_workitem(snapshot: Document, sid: str, now: dt.datetime) -> Document:
    """The workitem ``POST /snapshot`` saves: the snapshot under its origin id (before the
    last ``-``), ``snapshot-`` taken off its type, file contents emptied, ``$snapshotid``."""
    work = snapshot.copy()
    work["$uniqueid"] = sid.rsplit("-", 1)[0]
    work["type"] = str(snapshot.get_first("type", "")).removeprefix("snapshot-")
    work["$snapshotid"] = sid
    work["$modified"] = now
    for item in ("$immutable", "$noindex", "$backuprestore"):
        work.pop(item, None)
    files = work.get_first("$file")
    if isinstance(files, dict):
        work["$file"] = [{name: [v[0], b"", *v[2:]] for name, v in files.items()}]
    return work


def _created_order(doc: Document) -> tuple[Any, str]:
    """JPQL's ``ORDER BY document.created ASC, document.id ASC``."""
    return doc.get_first("$created"), str(doc.get_first("$uniqueid"))


def _xml(body: bytes) -> Reply:
    return 200, {"Content-Type": "application/xml"}, body


def _json(status: int, answer: dict[str, Any]) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(answer).encode()


def _refuse(code: str, message: str) -> Reply:
    doc = Document({"$error_code": code, "$error_message": message})
    return 406, {"Content-Type": "application/xml"}, to_xml(doc)


def _cookies(header: str) -> dict[str, str]:
    pairs = (part.strip().split("=", 1) for part in header.split(";") if "=" in part)
    return {name: value for name, value in pairs}


def _corrupt(body: bytes, kind: str) -> bytes:
    if kind == "truncate":
        return body[: max(1, len(body) // 2)]
    # malformed: a closing tag that does not match (expat fails on it)
    return body.replace(b"</item>", b"</itme>", 1) if b"</item>" in body else b"<data><document>"


class _Handler(LoopbackHandler):
    double: WorkflowDouble

    def _handle(self) -> None:
        double = self.double
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        body = self.read_body()
        with double.lock:
            double.stats.requests += 1
            double.stats.posts += self.command == "POST"
        if url.path.startswith(API + "/") and double.delays.get(self.command):
            time.sleep(double.delays[self.command])
        fault = double._fault_for(self.command, url.path)
        if fault is not None and fault.kind in ("timeout", "drop"):
            if fault.kind == "timeout":
                time.sleep(fault.delay)
            self._reset()
            return
        if fault is not None and fault.kind == "status":
            self._send(fault.status, {"Content-Type": "text/plain"}, b"injected failure")
            return
        reply = self._dispatch(url.path, query, body)
        self._send(*reply, fault=fault)

    def _dispatch(self, path: str, query: dict[str, str], body: bytes) -> Reply:
        double = self.double
        form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if path == TOKEN_PATH and self.command == "POST":
            return double._grant(form)
        if path.endswith("/j_security_check") and self.command == "POST":
            return double._login(form)
        if path.startswith(CONTROL):
            return double._control(path.removeprefix(CONTROL), self.command)
        if not path.startswith(API + "/"):
            return 404, {}, b""
        refused = double._authorised(self.headers)
        if refused is not None:
            return refused
        try:
            content_type = self.headers.get("Content-Type", "")
            return double.route(self.command, path, query, body, content_type)
        except (ValueError, KeyError) as exc:
            return 400, {"Content-Type": "text/plain"}, str(exc).encode()

    def _send(
        self, status: int, headers: dict[str, str], body: bytes, fault: Fault | None = None
    ) -> None:
        kind = fault.kind if fault is not None and body else None
        if kind in ("truncate", "malformed"):
            body = _corrupt(body, kind)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if kind == "reset":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self._reset()
        elif kind == "slow" and fault is not None:
            step = max(1, len(body) // 8)
            for start in range(0, len(body), step):
                self.wfile.write(body[start : start + step])
                self.wfile.flush()
                time.sleep(fault.delay / 8)
        else:
            self.wfile.write(body)

    def _reset(self) -> None:
        """Close the connection with a TCP reset (no FIN, no answer or half a body)."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    do_GET = do_POST = do_PUT = do_DELETE = _handle


Setup = Callable[[WorkflowDouble], None]


class JavaArchiveBeside:
    """A Java Imixs-Archive sharing the workflow, over HTTP like the real one: every
    ``interval`` s it calls ``release`` (which, on the real workflow, deletes every locked
    entry of the topics, also those another archive process holds) and, with
    ``consume``, takes up to ``batch`` events itself (lock, delete: archived elsewhere).
    A context manager; ``rounds`` counts its ticks."""

    TOPICS = "snapshot.add~snapshot.remove~"  # melman adds the trailing '~'

    def __init__(
        self,
        double: WorkflowDouble,
        interval: float = 5.0,
        *,
        consume: bool = False,
        batch: int = 100,
    ) -> None:
        self.double, self.interval, self.consume, self.batch = double, interval, consume, batch
        self.rounds = 0
        self.taken: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="java-beside", daemon=True)

    def __enter__(self) -> JavaArchiveBeside:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _call(self, method: str, path: str) -> bytes:
        import urllib.request

        request = urllib.request.Request(f"{self.double.url}/{path}", method=method)
        if self.double.auth == "BASIC":
            pair = f"{self.double.user}:{self.double.password}".encode()
            request.add_header("Authorization", "Basic " + base64.b64encode(pair).decode())
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return bytes(answer.read())
        except OSError:  # HTTPError included: the Java loop aborts its tick
            return b""

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._call("POST", f"eventlog/release/60000/{self.TOPICS}")
            if self.consume:
                body = self._call("GET", f"eventlog/snapshot.add?maxCount={self.batch}")
                for event in read_xml(body) if body.strip() else []:
                    event_id = str(event.get_first("id"))
                    self._call("POST", f"eventlog/lock/{event_id}")
                    self._call("DELETE", f"eventlog/{event_id}")
                    self.taken.append(str(event.get_first("ref")))
            self.rounds += 1
