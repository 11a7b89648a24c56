"""The workflow double as the torture uses it: snapshots offered as they are (the corpus
makes them), and every body ``restore`` posts kept, to compare with what was archived."""

from __future__ import annotations

from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from support.workflow_double import Reply, WorkflowDouble


class TortureDouble(WorkflowDouble):
    def __init__(self) -> None:
        super().__init__()
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
        if len(docs) == 1:
            sid = str(docs[0].get_first("$uniqueid", ""))
            with self.lock:
                self.received.setdefault(sid, []).append(body)
        return super()._restore(body)
