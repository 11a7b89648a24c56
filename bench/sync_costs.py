"""Where a small snapshot's sync time goes: the CPU cost of one workflow request and of
writing and parsing a small snapshot's XML.

    .venv/bin/python bench/sync_costs.py

The workflow double runs in a child process (its CPU is not counted). Not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import multiprocessing.connection
import random
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.workflow.client import WorkflowClient
from support.workflow_double import WorkflowDouble

ROUNDS = 300


def _serve(conn: multiprocessing.connection.Connection) -> None:
    double = WorkflowDouble()
    double.start()
    snapshot = double.save(subject="case")
    conn.send((double.url, str(snapshot.get_first("$uniqueid"))))
    conn.recv()
    double.stop()


def _per_call(call: Callable[[], object]) -> tuple[float, float]:
    call()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(ROUNDS):
        call()
    return (
        (time.perf_counter() - wall) / ROUNDS * 1000,
        (time.process_time() - cpu) / ROUNDS * 1000,
    )


def _snapshot() -> Document:
    rng = random.Random(1)
    words = ["invoice", "approved", "customer", "order", "amount"]
    items = {f"txt{n}": " ".join(rng.choice(words) for _ in range(30)) for n in range(20)}
    return Document({"$uniqueid": "x-1700000000000", "$modified": dt.datetime.now(dt.UTC), **items})


def main() -> None:
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("fork").Process(target=_serve, args=(child,))
    server.start()
    url, snapshot_id = parent.recv()
    try:
        with WorkflowClient(url) as client:
            for label, call in (
                (
                    "GET /documents/{id}?items=$snapshotid",
                    lambda: client.get_document(snapshot_id, ["$snapshotid"]),
                ),
                # The sync's other request per event; unlock (measured before) answers
                # 500 for an entry not locked, as the real workflow does.
                ("DELETE /eventlog/{id} (gone)", lambda: client.delete_event("gone-1")),
            ):
                wall, cpu = _per_call(call)
                print(f"{label}: {wall:.2f} ms wall, {cpu:.2f} ms CPU of the client")
    finally:
        parent.send("stop")
        server.join()
    doc = _snapshot()
    xml = to_xml(doc)
    write = timeit.timeit(lambda: to_xml(doc), number=ROUNDS) / ROUNDS * 1000
    read = timeit.timeit(lambda: read_xml_document(xml), number=ROUNDS) / ROUNDS * 1000
    print(f"snapshot of {len(xml)} bytes: write {write:.2f} ms, parse {read:.2f} ms")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__).parse_args()
    main()
