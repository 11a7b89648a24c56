"""Write the bundled sample snapshots in samples/ (run once; the output is committed).

Three process instances of a ticket workflow, built on the Imixs sample document
(shared/fixtures/imixs/document-example.xml): each step is a snapshot, attachments are
carried forward from step to step, as the workflow does.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import zlib
from pathlib import Path
from typing import Any

from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml

OUT = Path(__file__).resolve().parent.parent / "samples"
CET = dt.timezone(dt.timedelta(hours=1))
STEPS = [
    (1000, "Open", "ticket submitted"),
    (1100, "In Progress", "ticket accepted"),
    (1200, "Closed", "ticket solved"),
]


def attachment(name: str, content: bytes, content_type: str) -> tuple[str, list[Any]]:
    attributes = {
        "md5checksum": [hashlib.md5(content).hexdigest().upper()],
        "size": [len(content)],
        "txtname": [name],
    }
    return name, [content_type, content, attributes]


def fake_pdf(title: str) -> bytes:
    body = zlib.compress((f"BT /F1 12 Tf 72 720 Td ({title}) Tj ET\n" * 400).encode())
    return b"%PDF-1.4\n" + body + b"\n%%EOF\n"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for number, origin in enumerate(
        [
            "7c9e6679-7425-40de-944b-e07fc1f90ae7",
            "16fd2706-8baf-433b-82eb-8c7fada847da",
            "9b2e4f7a-1c3d-4e5f-8a9b-0c1d2e3f4a5b",
        ],
        start=1,
    ):
        created = dt.datetime(2024, 3, number * 5, 9, 15, 0, 125000, tzinfo=CET)
        files = [
            attachment(f"Ticket-{number}.pdf", fake_pdf(f"Ticket {number}"), "application/pdf")
        ]
        docs = []
        for step, (task, status, message) in enumerate(STEPS):
            modified = created + dt.timedelta(days=step, hours=step * 3, milliseconds=step * 7)
            if step == 1:
                log = "\n".join(f"{i:04d} checked item {i} for ticket {number}" for i in range(300))
                files.append(attachment("checklist.txt", log.encode(), "text/plain"))
            doc = Document(
                {
                    "$uniqueid": f"{origin}-{int(modified.timestamp() * 1000)}",
                    "$created": created,
                    "$modified": modified,
                    "type": "snapshot-workitem",
                    "$taskid": task,
                    "$workflowgroup": "Ticket",
                    "$workflowstatus": status,
                    "$modelversion": "1.0.1",
                    "$creator": "anna",
                    "namteam": ["anna", "rsoika", "manfred"],
                    "subject": f"Ticket {number}",
                    "amount": 55.123 * number,
                    "txtworkflowhistory": [[modified, message, None]],
                    "description": "<p>Test</p>",
                }
            )
            doc["$file"] = [dict(files)]
            doc["$file.names"] = [name for name, _ in files]
            doc["$file.count"] = len(files)
            docs.append(doc)
        (OUT / f"ticket-{number}.xml").write_bytes(to_xml(docs))


if __name__ == "__main__":
    main()
