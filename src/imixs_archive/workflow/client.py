"""The Imixs-Workflow REST client: the calls of the reference's section 4, and no more.

Synchronous ``httpx.Client``, safe to share between threads (the sync workers do).
Documents are streamed: :meth:`WorkflowClient.stream_document` yields the body's byte
blocks, to be fed straight into the streaming XML reader (``Archive.ingest``), so a
500 MB snapshot never sits whole in memory.

Every failure is one of the project's errors: ``WorkflowUnavailableError`` (refused,
reset, timeout, 5xx: pause and retry), ``WorkflowAuthError`` (401/403),
``NotFoundError`` (404 for a document), ``WorkflowRejectedError`` (406 on
``POST /snapshot``) or ``WorkflowError`` (anything else unexpected).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from imixs_archive.config import Settings
from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import iter_xml, to_xml
from imixs_archive.errors import DocumentError, NotFoundError
from imixs_archive.workflow.auth import Credentials, SessionAuth, make_auth
from imixs_archive.workflow.errors import (
    WorkflowAuthError,
    WorkflowError,
    WorkflowRejectedError,
    WorkflowUnavailableError,
)
from imixs_archive.workflow.events import SYNC_TOPICS, Event

XML = "application/xml"
DEFAULT_MAX_COUNT = 100


def _segment(text: str) -> str:
    return quote(text, safe="")


class WorkflowClient:
    """One workflow instance's REST API below ``endpoint`` (e.g. ``http://host:8080/api``)."""

    def __init__(
        self,
        endpoint: str,
        *,
        credentials: Credentials | None = None,
        auth: httpx.Auth | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        max_connections: int = 16,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not endpoint.strip():
            raise WorkflowError("no workflow endpoint configured (WORKFLOW_SERVICE_ENDPOINT)")
        self.endpoint = endpoint.rstrip("/")
        if auth is None and credentials is not None:
            auth = make_auth(credentials, self.endpoint)
        timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        common: dict[str, Any] = {"timeout": timeout, "transport": transport}
        self._http = httpx.Client(
            base_url=self.endpoint + "/",
            auth=auth,
            limits=limits,
            headers={"Accept": XML},
            **common,
        )
        # Logins and token requests go out unauthenticated, on a client of their own.
        self._plain = httpx.Client(**common)
        if isinstance(auth, SessionAuth):
            auth.bind(self._plain.send)
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
        )

    # ---- the event log ----------------------------------------------------------------

    def release_events(self, millis: int, topics: Sequence[str] = SYNC_TOPICS) -> None:
        """Unlock entries of these topics locked longer than ``millis`` ms ago."""
        self._call("POST", f"eventlog/release/{int(millis)}/{self._topics(topics)}")

    def read_events(
        self, topics: Sequence[str] = SYNC_TOPICS, max_count: int = DEFAULT_MAX_COUNT
    ) -> list[Event]:
        """Unlocked entries of these topics, oldest first, at most ``max_count``."""
        response = self._call(
            "GET", f"eventlog/{self._topics(topics)}", params={"maxCount": max_count}
        )
        return [Event.from_document(doc) for doc in self._documents(response)]

    def lock_event(self, event_id: str) -> bool:
        """Lock an entry: True, or False when someone else holds it (409)."""
        response = self._call("POST", f"eventlog/lock/{_segment(event_id)}", allow=(409,))
        return response.status_code != 409

    def unlock_event(self, event_id: str) -> None:
        self._call("POST", f"eventlog/unlock/{_segment(event_id)}", allow=(404,))

    def delete_event(self, event_id: str) -> None:
        """Remove a handled entry (one already gone is not an error)."""
        self._call("DELETE", f"eventlog/{_segment(event_id)}", allow=(404,))

    def put_event(self, topic: str, ref: str) -> None:
        """Create an entry (``snapshot.backup`` for the backup service, or a re-queue)."""
        self._call(
            "PUT",
            f"eventlog/{_segment(topic)}/{_segment(ref)}",
            content=to_xml(Document()),
            headers={"Content-Type": XML},
        )

    # ---- documents and snapshots --------------------------------------------------------

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
        response = self._call("GET", f"documents/{_segment(uniqueid)}", params=params)
        docs = self._documents(response)
        if not docs:
            raise NotFoundError(f"the workflow has no document {uniqueid}")
        return docs[0]

    @contextmanager
    def stream_syncpoint(self, millis: int) -> Iterator[Iterator[bytes]]:
        """The snapshots with the smallest ``$modified`` after ``millis`` (at most 16), as a
        stream of ``<data>`` XML; an empty ``<data/>`` when there are none."""
        with self._stream("GET", f"snapshot/syncpoint/{int(millis)}", None) as blocks:
            yield blocks

    def syncpoint(self, millis: int) -> list[Document]:
        """As :meth:`stream_syncpoint`, read whole."""
        return self._documents(self._call("GET", f"snapshot/syncpoint/{int(millis)}"))

    def post_snapshot(self, snapshot: Document | Iterable[bytes]) -> None:
        """Restore: the workflow stores the snapshot and rebuilds the live workitem from
        it. A ``Document`` is streamed out (its file contents may be streams)."""
        body: Iterable[bytes] = (
            iter_xml(snapshot, collection=False) if isinstance(snapshot, Document) else snapshot
        )
        response = self._call(
            "POST", "snapshot", content=body, headers={"Content-Type": XML}, allow=(406,)
        )
        if response.status_code == 406:
            raise _rejected(response)

    # ---- plumbing -----------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()
        self._plain.close()

    def __enter__(self) -> WorkflowClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _topics(topics: Sequence[str]) -> str:
        return "~".join(_segment(topic) for topic in topics)

    def _call(
        self, method: str, path: str, *, allow: tuple[int, ...] = (), **kw: Any
    ) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kw)
        except httpx.TransportError as exc:
            raise _unavailable(method, path, exc) from exc
        if response.status_code not in allow:
            _check(response, f"{method} {path}")
        return response

    @contextmanager
    def _stream(
        self, method: str, path: str, params: dict[str, str] | None
    ) -> Iterator[Iterator[bytes]]:
        try:
            with self._http.stream(method, path, params=params) as response:
                if response.is_error or _is_html(response):
                    response.read()
                _check(response, f"{method} {path}")
                yield _mapped(response.iter_bytes(), method, path)
        except httpx.TransportError as exc:
            raise _unavailable(method, path, exc) from exc

    @staticmethod
    def _documents(response: httpx.Response) -> list[Document]:
        if not response.content.strip():
            return []
        try:
            return read_xml(response.content)
        except DocumentError as exc:
            raise WorkflowError(
                f"{response.request.method} {response.request.url}: not Imixs XML: {exc}"
            ) from None


def _is_html(response: httpx.Response) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.startswith("text/html")


def _check(response: httpx.Response, what: str) -> None:
    status = response.status_code
    if status >= 500:
        raise WorkflowUnavailableError(f"{what}: HTTP {status}", status)
    if status in (401, 403):
        raise WorkflowAuthError(f"{what}: HTTP {status} (check the credentials)", status)
    if status == 404:
        raise NotFoundError(f"{what}: not found in the workflow")
    if status >= 300:
        raise WorkflowError(f"{what}: unexpected HTTP {status}", status)
    if _is_html(response):
        raise WorkflowAuthError(f"{what}: the workflow answered a login page", status)


def _unavailable(method: str, path: str, exc: httpx.TransportError) -> WorkflowUnavailableError:
    down = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
    detail = str(exc) or type(exc).__name__
    return WorkflowUnavailableError(f"{method} {path}: {type(exc).__name__}: {detail}", down=down)


def _mapped(blocks: Iterator[bytes], method: str, path: str) -> Iterator[bytes]:
    """The body's blocks; a transport failure mid-body becomes ``WorkflowUnavailableError``."""
    try:
        yield from blocks
    except httpx.TransportError as exc:
        raise _unavailable(method, path, exc) from exc


def _rejected(response: httpx.Response) -> WorkflowRejectedError:
    code, message = "", response.text.strip()[:500]
    try:
        docs = read_xml(response.content)
    except DocumentError:
        docs = []
    if docs:
        code = str(docs[0].get_first("$error_code", ""))
        message = str(docs[0].get_first("$error_message", "")) or message
    return WorkflowRejectedError(
        f"the workflow refused the snapshot: {code or 'HTTP 406'}: {message}", 406, code
    )
