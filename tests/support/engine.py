"""The real Imixs-Workflow engine (``scripts/imixs-workflow``) as the tests drive it: a
business application's calls over its REST API (process instances created and moved
through the test model, attachments, several users), and what the engine then holds
(snapshots, the event log). ``ARCHIVE_TEST_ENGINE`` is the engine's API base URL
(``http://127.0.0.1:8081/api``); without it the engine tests skip.

Model ``ticket-1.0.0`` (``scripts/imixs-workflow.d/src/main/resources/model``): task 1000
Open, event 10 submit -> 1100 In Progress; 1100: 10 update (stays), 20 keep two (sets
``$snapshot.history=2``), 30 close -> 1200 Closed; 1200: 10 reopen -> 1100. Every save
writes a snapshot (``$snapshotid`` on the answer) and, as the archive service is
configured, a ``snapshot.add`` event."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import to_xml
from support.snapshots import content_of

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "imixs-workflow"
MODEL = "ticket-1.0.0"
ADMIN = ("admin", "adminadmin")
USERS = {
    "admin": "adminadmin",
    "alex": "alexalex",
    "marty": "martymarty",
    "anna": "annaanna",
    "rita": "ritarita",
}
SYNC_TOPICS = ("snapshot.add", "snapshot.remove")


def engine_url() -> str:
    return os.environ.get("ARCHIVE_TEST_ENGINE", "").rstrip("/")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def documents(self) -> list[Document]:
        return read_xml(self.body) if self.body.strip() else []


@dataclass
class Instance:
    """A process instance a test created: its id and every snapshot the engine wrote."""

    uniqueid: str
    snapshots: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Engine:
    """Calls to the engine's REST API (``urllib``: nothing of the archive's client)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()

    def call(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        user: str | None = "admin",
        auth: str | None = None,
        content_type: str = "application/xml",
        timeout: float = 300.0,
    ) -> Reply:
        request = urllib.request.Request(f"{self.url}/{path.lstrip('/')}", data=body, method=method)
        if auth is None and user is not None:
            auth = basic(user, USERS[user])
        if auth:
            request.add_header("Authorization", auth)
        if body is not None:
            request.add_header("Content-Type", content_type)
        request.add_header("Accept", "application/xml")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return Reply(answer.status, dict(answer.headers), answer.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, dict(error.headers), error.read())

    # ---- what a business application does ----------------------------------------------

    def process(self, items: dict[str, Any], *, user: str = "admin") -> Document:
        """``POST /workflow/workitem``: a new instance (``$taskid``/``$eventid``) or the
        next event of one (``$uniqueid``); the workitem the engine answers."""
        reply = self.call("POST", "workflow/workitem", to_xml(Document(items)), user=user)
        assert reply.status == 200, (reply.status, reply.body[:600])
        [workitem] = reply.documents()
        return workitem

    def create(
        self, subject: str, files: dict[str, bytes] | None = None, *, user: str = "admin"
    ) -> Instance:
        """A ticket opened and submitted (task 1000, event 10): its first snapshot."""
        items: dict[str, Any] = {
            "$modelversion": MODEL,
            "$taskid": 1000,
            "$eventid": 10,
            "subject": subject,
        }
        if files:
            items["$file"] = [{name: [_type(name), data, {}] for name, data in files.items()}]
        workitem = self.process(items, user=user)
        instance = Instance(str(workitem.get_first("$uniqueid")), files=dict(files or {}))
        instance.snapshots.append(str(workitem.get_first("$snapshotid")))
        return instance

    def move(
        self,
        instance: Instance,
        event: int = 10,
        *,
        user: str = "admin",
        files: dict[str, bytes] | None = None,
        **items: Any,
    ) -> str:
        """The instance's next event (``files``: its attachments replaced); the new
        snapshot's id."""
        body: dict[str, Any] = {"$uniqueid": instance.uniqueid, "$eventid": event, **items}
        if files is not None:
            body["$file"] = [{name: [_type(name), data, {}] for name, data in files.items()}]
            instance.files = dict(files)
        workitem = self.process(body, user=user)
        snapshot = str(workitem.get_first("$snapshotid"))
        assert snapshot not in instance.snapshots
        instance.snapshots.append(snapshot)
        return snapshot

    def delete(self, uniqueid: str) -> None:
        """``DELETE /documents/{id}``: the engine removes the workitem and (its
        SnapshotService) every snapshot of it, and writes no event."""
        reply = self.call("DELETE", f"documents/{uniqueid}")
        assert reply.status in (200, 204), (reply.status, reply.body[:300])

    # ---- what the engine holds ------------------------------------------------------------

    def document(self, uniqueid: str) -> Document | None:
        reply = self.call("GET", f"documents/{uniqueid}")
        if reply.status == 404:
            return None
        assert reply.status == 200, (reply.status, reply.body[:300])
        docs = reply.documents()
        return docs[0] if docs else None

    def events(self, topics: tuple[str, ...] = SYNC_TOPICS) -> list[Document]:
        reply = self.call("GET", f"eventlog/{'~'.join(topics)}?maxCount=100000")
        assert reply.status == 200, reply.status
        return reply.documents()

    def snapshots_between(self, millis: int, until: int) -> list[Document]:
        """Every snapshot the engine holds modified after ``millis`` and up to ``until``
        (its ``/snapshot/syncpoint`` walked, as the archive's catch-up walks it)."""
        found: list[Document] = []
        while millis < until and (
            docs := self.call("GET", f"snapshot/syncpoint/{millis}").documents()
        ):
            millis = max(int(d.get_first("$modified").timestamp() * 1000) for d in docs)
            found += [d for d in docs if d.get_first("$modified").timestamp() * 1000 <= until]
        return found

    def restart(self, port: int, history: int = 0) -> None:
        """Stop the engine and start it again on its data (``--keep``), with
        ``SNAPSHOT_HISTORY=history``."""
        start = ["start", "--keep", "--port", str(port), "--history", str(history)]
        for command in (["stop"], start):
            done = subprocess.run(
                [str(SCRIPT), *command], capture_output=True, text=True, timeout=600
            )
            assert done.returncode == 0, done.stderr[-3000:]


def file_digests(doc: Document) -> dict[str, str]:
    """File name -> SHA-256 of its bytes (the ``$file`` map of a snapshot)."""
    files = doc.get_first("$file") or {}
    return {name: hashlib.sha256(content_of(doc, name)).hexdigest() for name in files}


def _type(name: str) -> str:
    return "application/pdf" if name.endswith(".pdf") else "application/octet-stream"
