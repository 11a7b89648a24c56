"""Write a realistic month of snapshots (April 2024) as one XML ``<data>`` stream, for a
first look at what the archive shows: the Quick start pipes it into ``import -``.

Forty process instances across four workflow groups, each a few steps apart (hours to
days), with attachments carried from step to step as the workflow does (some replaced by
a slightly edited version, some added on the way); most instances finish inside the
month, so Statistics and lead times have something to show. Deterministic: the same
bytes on every run (``--seed`` for another month). About 8 MB of XML, 2 MiB stored;
143 snapshots, 141 in April and 2 in May (an instance or two finishes after the month).

    .venv/bin/python scripts/demo_month.py | .venv/bin/imixs-archive import -
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import random
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import write_xml

START = dt.datetime(2024, 4, 1, tzinfo=dt.timezone(dt.timedelta(hours=2)))
INSTANCES = 40
PEOPLE = ["anna", "rsoika", "manfred", "lena", "tom", "mira", "jonas"]
# group -> steps (task id, status, history message); the last step finishes the instance
GROUPS: dict[str, list[tuple[int, str, str]]] = {
    "Ticket": [
        (1000, "Open", "ticket submitted"),
        (1100, "In Progress", "ticket accepted"),
        (1200, "Completed", "ticket solved"),
    ],
    "Invoice": [
        (2000, "Received", "invoice received"),
        (2100, "Checked", "invoice checked"),
        (2200, "Approved", "invoice approved"),
        (2300, "Completed", "invoice paid"),
    ],
    "Purchase order": [
        (3000, "Draft", "order drafted"),
        (3100, "Submitted", "order submitted"),
        (3200, "Approved", "order approved"),
        (3300, "Ordered", "order placed"),
        (3400, "Completed", "goods received"),
    ],
    "Leave request": [
        (4000, "Submitted", "request submitted"),
        (4100, "Approved", "request approved"),
        (4200, "Closed", "request closed"),
    ],
}


def attachment(name: str, content: bytes, content_type: str) -> list[Any]:
    attributes = {
        "md5checksum": [hashlib.md5(content).hexdigest().upper()],
        "size": [len(content)],
        "txtname": [name],
    }
    return [content_type, content, attributes]


def scanned_pdf(rng: random.Random, title: str) -> bytes:
    """Compressed-looking bytes of 10 to 80 KB, as a scanned PDF is."""
    return b"%PDF-1.4\n% " + title.encode() + b"\n" + rng.randbytes(rng.randint(10_000, 80_000))


def edited(rng: random.Random, content: bytes) -> bytes:
    """A new version of a file: a few bytes changed in the middle, the rest the same."""
    at = rng.randint(len(content) // 3, 2 * len(content) // 3)
    return content[:at] + rng.randbytes(64) + content[at + 64 :]


def instance(rng: random.Random, number: int) -> Iterator[Document]:
    """The snapshots of one process instance, oldest first."""
    group = rng.choice(list(GROUPS))
    steps = GROUPS[group]
    origin = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    created = START + dt.timedelta(days=rng.uniform(0, 26), hours=rng.uniform(0, 9))
    created = created.replace(
        hour=max(created.hour, 8), microsecond=created.microsecond // 1000 * 1000
    )
    creator = rng.choice(PEOPLE)
    team = sorted(rng.sample(PEOPLE, 3))
    subject = f"{group} {number:03d}"
    files = {
        f"{subject}.pdf": attachment(f"{subject}.pdf", scanned_pdf(rng, subject), "application/pdf")
    }
    finished = rng.random() < 0.8
    last = len(steps) if finished else rng.randint(1, len(steps) - 1)
    history: list[list[Any]] = []
    modified = created
    amount = round(rng.uniform(40, 9000), 2)
    for step, (task, status, message) in enumerate(steps[:last]):
        if step:
            modified += dt.timedelta(hours=rng.expovariate(1 / 30) + 0.5)
        if step == 1 and rng.random() < 0.5:
            notes = "\n".join(f"{i:03d} {rng.choice(PEOPLE)}: checked" for i in range(400))
            files["notes.txt"] = attachment("notes.txt", notes.encode(), "text/plain")
        if step == 2 and rng.random() < 0.4:
            name = f"{subject}.pdf"
            files[name] = attachment(name, edited(rng, files[name][1]), "application/pdf")
        editor = rng.choice(team)
        history.append([modified, f"{message} by {editor}", None])
        done = finished and step == last - 1
        yield _snapshot(
            origin,
            modified,
            {
                "$created": created,
                "type": "snapshot-workitemarchive" if done else "snapshot-workitem",
                "$taskid": task,
                "$workflowgroup": group,
                "$workflowstatus": status,
                "$modelversion": "1.0.0",
                "$creator": creator,
                "$editor": editor,
                "namteam": team,
                "subject": subject,
                "amount": amount,
                "txtworkflowhistory": [list(entry) for entry in history],
            },
            files,
        )


def _snapshot(
    origin: str, modified: dt.datetime, items: dict[str, Any], files: dict[str, list[Any]]
) -> Document:
    doc = Document(
        {
            "$uniqueid": f"{origin}-{int(modified.timestamp() * 1000)}",
            "$modified": modified,
            **items,
        }
    )
    doc["$file"] = [dict(files)]
    doc["$file.names"] = list(files)
    doc["$file.count"] = len(files)
    return doc


def month(seed: int = 2024) -> Iterator[Document]:
    rng = random.Random(seed)
    for number in range(1, INSTANCES + 1):
        yield from instance(rng, number)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=2024, help="another month (default 2024)")
    parser.add_argument("-o", "--output", type=Path, help="a file instead of standard output")
    args = parser.parse_args(argv)
    if args.output is None:
        write_xml(month(args.seed), sys.stdout.buffer, collection=True)
        return
    with args.output.open("wb") as out:
        write_xml(month(args.seed), out, collection=True)


if __name__ == "__main__":
    main()
