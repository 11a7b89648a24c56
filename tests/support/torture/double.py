"""The workflow double as the torture uses it: snapshots offered as they are (the corpus
makes them), and every body ``restore`` posts kept, to compare with what was archived. A
restored snapshot the workflow did not hold is stored with the workflow's own
``$modified`` (as the engine saves it): the model learns that version as sent too."""

from __future__ import annotations

from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from support.torture.model import Model, describe
from support.workflow_double import Reply, WorkflowDouble


class TortureDouble(WorkflowDouble):
    def __init__(self, model: Model) -> None:
        super().__init__()
        self.model = model
        self.received: dict[str, list[bytes]] = {}
        """Snapshot id -> each body ``POST /snapshot`` brought for it."""

    def offer(self, snapshot: Document) -> None:
        """The workflow saved a workitem: its snapshot (as given) and a ``snapshot.add``
        event."""
        sid = str(snapshot.get_first("$uniqueid"))
        work = snapshot.copy()
        work["$uniqueid"] = sid.rsplit("-", 1)[0]
        work["type"] = str(snapshot.get_first("type")).removeprefix("snapshot-")
        work["$snapshotid"] = sid
        with self.lock:
            self._put_snapshot(snapshot)
            self.workitems[str(work.get_first("$uniqueid"))] = work
            self.put_event("snapshot.add", sid)

    def pending(self) -> set[str]:
        """Snapshot ids of the ``snapshot.add`` events still in the log (locked or not)."""
        with self.lock:
            return {e.ref for e in self.log.values() if e.topic.startswith("snapshot.add")}

    def _restore(self, body: bytes) -> Reply:
        try:
            docs = read_xml(body)
        except Exception:  # the double's own answer says what was wrong
            docs = []
        sid = str(docs[0].get_first("$uniqueid", "")) if len(docs) == 1 else ""
        if sid:
            with self.lock:
                self.received.setdefault(sid, []).append(body)
        reply = super()._restore(body)
        first = self.model.sent.get(sid)
        with self.lock:
            stored = self.snapshots.get(sid)
        if first is not None and stored is not None:
            self.model.also_sent(describe(stored, first.expires))
        return reply
