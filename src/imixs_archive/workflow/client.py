"""The Imixs-Workflow REST client: the calls of the reference's section 4, and no more.

Synchronous, safe to share between threads (the sync workers do); HTTP by
``workflow.transport`` (kept-alive ``http.client`` connections).
Documents are streamed: :meth:`WorkflowClient.stream_document` yields the body's byte
blocks, to be fed straight into the streaming XML reader (``Archive.ingest``), so a
500 MB snapshot never sits whole in memory.

Every failure is one of the project's errors: ``WorkflowUnavailableError`` (refused,
reset, timeout, 5xx: pause and retry), ``WorkflowAuthError`` (401/403),
``NotFoundError`` (404 for a document), ``WorkflowRejectedError`` (406 on
``POST /snapshot``) or ``WorkflowError`` (anything else unexpected).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from urllib.parse import quote, urlencode

from imixs_archive.config import Settings
from imixs_archive.document.conventions import not_a_snapshot
from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import iter_xml, to_xml
from imixs_archive.errors import ConfigError, DocumentError, NotFoundError
from imixs_archive.workflow.auth import Auth, Credentials, SessionAuth, make_auth
from imixs_archive.workflow.errors import (
    WorkflowAuthError,
    WorkflowError,
    WorkflowRejectedError,
    WorkflowUnavailableError,
)
from imixs_archive.workflow.events import SYNC_TOPICS, Event
from imixs_archive.workflow.transport import Body, ConnectionPool, Reply, Transport

XML = "application/xml"
DEFAULT_MAX_COUNT = 100
FORM = "application/x-www-form-urlencoded"

Content = Body | Callable[[], Iterable[bytes]]
"""A request body; a callable makes a streamed body that can be sent again (after a
refused login) by calling it again."""


def _segment(text: str) -> str:
    return quote(text, safe="")


class WorkflowClient:
    """One workflow instance's REST API below ``endpoint`` (e.g. ``http://host:8080/api``)."""

    def __init__(
        self,
        endpoint: str,
        *,
        credentials: Credentials | None = None,
        auth: Auth | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        max_connections: int = 16,
        cafile: str = "",
        transport: Transport | None = None,
    ) -> None:
        if not endpoint.strip():
            raise ConfigError("no workflow endpoint configured (WORKFLOW_SERVICE_ENDPOINT)")
        self.endpoint = endpoint.rstrip("/")
        if auth is None and credentials is not None:
            auth = make_auth(credentials, self.endpoint)
        self._http: Transport = transport or ConnectionPool(
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_idle=max_connections,
            tls=_tls(cafile) if cafile else None,
        )
        if isinstance(auth, SessionAuth):
            auth.bind(self._post_form)
        self.auth = auth

    @classmethod
    def from_settings(cls, settings: Settings, *, workers: int = 0) -> WorkflowClient:
        """The client the settings describe (``WORKFLOW_*``, ``OIDC_*``)."""
        credentials = Credentials(
            method=settings.workflow_service_authmethod,
            user=settings.workflow_service_user,
            password=settings.workflow_service_password,
            token=settings.workflow_service_token,
            oidc_endpoint=settings.oidc_auth_endpoint,
            oidc_client_id=settings.oidc_auth_client_id,
            oidc_client_secret=settings.oidc_auth_client_secret,
        )
        return cls(
            settings.workflow_service_endpoint,
            credentials=credentials,
            connect_timeout=settings.workflow_rest_connecttimeout / 1000,
            read_timeout=settings.workflow_rest_readtimeout / 1000,
            max_connections=max(4, workers + 2),
            cafile=settings.workflow_rest_cafile,
        )

    # ---- the event log ----------------------------------------------------------------

    def release_events(self, millis: int, topics: Sequence[str] = SYNC_TOPICS) -> None:
        """Documented as "unlock entries locked longer than ``millis`` ms"; the workflow in
        fact **deletes** every entry locked with one of these topics, whatever its age."""
        self._call("POST", f"eventlog/release/{int(millis)}/{self._topics(topics)}", resend=True)

    def read_events(
        self, topics: Sequence[str] = SYNC_TOPICS, max_count: int = DEFAULT_MAX_COUNT
    ) -> list[Event]:
        """Unlocked entries of these topics, oldest first, at most ``max_count``."""
        reply = self._call("GET", f"eventlog/{self._topics(topics)}", {"maxCount": max_count})
        return [Event.from_document(doc) for doc in self._documents(reply)]

    def lock_event(self, event_id: str) -> bool:
        """Lock an entry: True, or False for 409 or 404 (the documented answers when
        someone else holds it or it is gone).

        The real workflow answers 200 also when the entry is locked already (the topic
        becomes ``<topic>.lock.lock``) and 500 when it is missing: the lock hides an
        entry from readers of its topic, it does not keep two processes apart. Sent a
        second time when the connection drops before an answer."""
        path = f"eventlog/lock/{_segment(event_id)}"
        reply = self._call("POST", path, allow=(404, 409), resend=True)
        return reply.status < 300

    def unlock_event(self, event_id: str) -> None:
        """Strip the last ``.lock``; the real workflow answers 500 for an entry that is
        missing or not locked."""
        self._call("POST", f"eventlog/unlock/{_segment(event_id)}", allow=(404,), resend=True)

    def delete_event(self, event_id: str) -> None:
        """Remove a handled entry (one already gone is not an error: 204, or 404)."""
        self._call("DELETE", f"eventlog/{_segment(event_id)}", allow=(404,))

    def put_event(self, topic: str, ref: str, data: Document | None = None) -> None:
        """Create an entry (``snapshot.backup`` for the backup service, or a re-queue);
        ``data``: its items, which the entry keeps as its ``data`` (``NO_OVERWRITE``)."""
        self._call(
            "PUT",
            f"eventlog/{_segment(topic)}/{_segment(ref)}",
            content=to_xml(data if data is not None else Document()),
            content_type=XML,
        )

    # ---- documents and snapshots --------------------------------------------------------

    def query_documents(
        self, jpql: str, *, page_size: int, page_index: int, items: Sequence[str] = ()
    ) -> list[Document]:
        """One page of a JPQL query (``GET /documents/jpql/{query}``, as melman's
        ``DocumentClient.queryDocuments`` asks), with only ``items`` when given."""
        params: dict[str, str | int] = {"pageSize": page_size, "pageIndex": page_index}
        if items:
            params["items"] = ",".join(items)
        return self._documents(self._call("GET", f"documents/jpql/{_segment(jpql)}", params))

    @contextmanager
    def stream_document(
        self, uniqueid: str, items: Sequence[str] | None = None
    ) -> Iterator[Iterator[bytes]]:
        """The XML of one document (``<data><document>``) as a stream of byte blocks."""
        params = {"items": ",".join(items)} if items else None
        with self._stream("GET", f"documents/{_segment(uniqueid)}", params) as blocks:
            yield blocks

    def get_document(self, uniqueid: str, items: Sequence[str] | None = None) -> Document:
        """One document, read whole (use for small ones, e.g. ``items=['$snapshotid']``)."""
        params = {"items": ",".join(items)} if items else None
        docs = self._documents(self._call("GET", f"documents/{_segment(uniqueid)}", params))
        if not docs:
            raise NotFoundError(f"the workflow has no document {uniqueid}")
        return docs[0]

    @contextmanager
    def stream_syncpoint(self, millis: int) -> Iterator[Iterator[bytes]]:
        """The snapshots with the smallest ``$modified`` after ``millis``, as a stream of
        ``<data>`` XML; an empty ``<data/>`` when there are none (the engine answers that;
        an answer without a body, 204, is read as one too). More than 16 sharing that
        timestamp: the workflow answers 500, a ``WorkflowUnavailableError``."""
        with self._stream("GET", f"snapshot/syncpoint/{int(millis)}", None) as blocks:
            yield _or_empty_data(blocks)

    def syncpoint(self, millis: int) -> list[Document]:
        """As :meth:`stream_syncpoint`, read whole."""
        return self._documents(self._call("GET", f"snapshot/syncpoint/{int(millis)}"))

    def post_snapshot(self, snapshot: Document | Iterable[bytes]) -> None:
        """Restore: the workflow stores the snapshot and rebuilds the live workitem from
        it. A ``Document`` is streamed out (its file contents may be streams). One whose
        type is not ``snapshot-...`` is refused here: the engine would accept it and save a
        document of that type under a made-up origin id (tests/engine)."""
        body: Content
        if isinstance(snapshot, Document):
            refuse_non_snapshot(snapshot)
            document = snapshot
            body = lambda: iter_xml(document, collection=False)  # noqa: E731
        else:
            body = snapshot
        reply = self._call("POST", "snapshot", content=body, content_type=XML, allow=(406,))
        if reply.status == 406:
            raise _rejected(reply)

    # ---- plumbing -----------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> WorkflowClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _topics(topics: Sequence[str]) -> str:
        return "~".join(_segment(topic) for topic in topics)

    def _url(self, path: str, params: Mapping[str, str | int] | None) -> str:
        query = f"?{urlencode(params)}" if params else ""
        return f"{self.endpoint}/{path}{query}"

    def _call(
        self,
        method: str,
        path: str,
        params: Mapping[str, str | int] | None = None,
        *,
        content: Content = None,
        content_type: str = "",
        allow: tuple[int, ...] = (),
        resend: bool = False,
    ) -> Reply:
        url = self._url(path, params)
        replayable = content is None or isinstance(content, bytes) or callable(content)
        for attempt in range(2):
            headers = {"Accept": XML}
            if content_type:
                headers["Content-Type"] = content_type
            generation = self.auth.apply(headers) if self.auth is not None else 0
            body = content() if callable(content) else content
            reply = self._http.request(method, url, headers, body, resend=resend)
            if (
                attempt == 0
                and replayable
                and self._renewed(reply.status, reply.content_type, generation)
            ):
                continue
            break
        if reply.status not in allow:
            _check(reply.status, reply.content_type, f"{method} {path}")
        return reply

    @contextmanager
    def _stream(
        self, method: str, path: str, params: dict[str, str] | None
    ) -> Iterator[Iterator[bytes]]:
        url = self._url(path, params)
        for attempt in range(2):
            headers = {"Accept": XML}
            generation = self.auth.apply(headers) if self.auth is not None else 0
            response = self._http.open(method, url, headers)
            if attempt == 0 and self._renewed(response.status, response.content_type, generation):
                response.close()
                continue
            break
        with response:
            if response.status >= 300 or _is_html(response.content_type):
                response.close()  # the body of an error is not needed
            _check(response.status, response.content_type, f"{method} {path}")
            yield response.iter_blocks()

    def _renewed(self, status: int, content_type: str, generation: int) -> bool:
        """True when the credentials were refused and are renewed now: send again."""
        if self.auth is None or not self.auth.refused(status, content_type):
            return False
        self.auth.renew(generation)
        return True

    def _post_form(self, url: str, form: dict[str, str]) -> Reply:
        """A login or token request (unauthenticated)."""
        headers = {"Content-Type": FORM, "Accept": "*/*"}
        return self._http.request("POST", url, headers, urlencode(form).encode())

    @staticmethod
    def _documents(reply: Reply) -> list[Document]:
        if not reply.body.strip():
            return []
        try:
            return read_xml(reply.body)
        except DocumentError as exc:
            raise WorkflowError(f"{reply.method} {reply.url}: not Imixs XML: {exc}") from None


def _or_empty_data(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """The blocks, or an empty ``<data/>`` for an answer without a body (204)."""
    empty = True
    for block in blocks:
        if block:
            empty = False
            yield block
    if empty:
        yield b"<data/>"


def _tls(cafile: str) -> ssl.SSLContext:
    try:
        return ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"WORKFLOW_REST_CAFILE: cannot read {cafile}: {exc}") from None


def _is_html(content_type: str) -> bool:
    return content_type.startswith("text/html")


def _check(status: int, content_type: str, what: str) -> None:
    if status >= 500:
        raise WorkflowUnavailableError(f"{what}: HTTP {status}", status)
    if status in (401, 403):
        raise WorkflowAuthError(f"{what}: HTTP {status} (check the credentials)", status)
    if status == 404:
        raise NotFoundError(f"{what}: not found in the workflow")
    if status >= 300:
        raise WorkflowError(f"{what}: unexpected HTTP {status}", status)
    if _is_html(content_type):
        raise WorkflowAuthError(f"{what}: the workflow answered a login page", status)


def refuse_non_snapshot(doc: Document) -> None:
    """A ``WorkflowRejectedError`` for a document the workflow would not take back as a
    snapshot (``not_a_snapshot``); a dry run asks the same."""
    if (why := not_a_snapshot(doc)) is not None:
        sid = doc.get_first("$uniqueid", "")
        raise WorkflowRejectedError(f"{sid}: {why} (not sent)", 406, "NOT_A_SNAPSHOT")


def _rejected(reply: Reply) -> WorkflowRejectedError:
    code, message = "", reply.text.strip()[:500]
    try:
        docs = read_xml(reply.body)
    except DocumentError:
        docs = []
    if docs:
        code = str(docs[0].get_first("$error_code", ""))
        message = str(docs[0].get_first("$error_message", "")) or message
    return WorkflowRejectedError(
        f"the workflow refused the snapshot: {code or 'HTTP 406'}: {message}", 406, code
    )
