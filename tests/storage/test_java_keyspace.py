"""A keyspace the Java Imixs-Archive wrote, on a real Cassandra node, and the reverse.

The Java side is played step by step as its code does it (``ClusterService`` DDL,
``DataService.saveSnapshot``/``loadSnapshot``/``loadFileData``; see
``shared/reference/java-compat-audit.md`` §2): plain CQL with the exact DDL, files cut into
1 MiB chunks under random UUID ``data_id``s, upper-case MD5 keys, snapshot XML with file
contents emptied, no ``archive_*`` rows. This archive then opens that keyspace (upgrading
it in place), reads, verifies and restores every snapshot; and a reader following Java's
steps reads back every snapshot this archive wrote.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.document.conventions import iter_files
from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.recovery.restore import Restorer, RestoreRange
from imixs_archive.storage.model import TABLES
from imixs_archive.workflow.client import WorkflowClient
from support.backends import CASSANDRA_SKIP, cassandra_target, open_cassandra, random_keyspace
from support.restore_data import file_hashes
from support.snapshots import file_values, make_snapshot
from support.workflow_double import WorkflowDouble

pytestmark = pytest.mark.cassandra

MiB = 1024 * 1024
JAVA_DDL = (
    "CREATE TABLE IF NOT EXISTS snapshots (snapshot text, data blob, PRIMARY KEY (snapshot))",
    "CREATE TABLE IF NOT EXISTS snapshots_by_uniqueid (uniqueid text,snapshot text, "
    "PRIMARY KEY(uniqueid, snapshot));",
    "CREATE TABLE IF NOT EXISTS snapshots_by_modified (modified date,snapshot text,"
    "PRIMARY KEY(modified, snapshot));",
    "CREATE TABLE IF NOT EXISTS documents (md5 text, sort_id int, data_id text, "
    "PRIMARY KEY (md5,sort_id))",
    "CREATE TABLE IF NOT EXISTS snapshots_by_document (md5 text,snapshot text, "
    "PRIMARY KEY(md5, snapshot));",
    "CREATE TABLE IF NOT EXISTS documents_data (data_id text, data blob, PRIMARY KEY (data_id))",
)
ORIGINS = ("a0000000-0000-4000-8000-00000000000a", "b0000000-0000-4000-8000-00000000000b")


def _content(seed: int, size: int) -> bytes:
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:size])


def _snapshots() -> list[Document]:
    """Two instances, three snapshots each; files under, at and over 1 MiB, a file carried
    from snapshot to snapshot, an edited one, and a file with empty content."""
    docs = []
    for n, origin in enumerate(ORIGINS):
        for step in range(3):
            files: dict[str, Any] = {
                "contract.pdf": _content(n, 2 * MiB + 12345),  # carried, three chunks
                f"scan-{step}.tif": _content(100 * n + step, MiB),  # exactly one chunk
                "notes.txt": _content(1000 + step, 700),  # edited every step
                "link.url": file_values(b"", "text/uri-list"),  # no content
            }
            docs.append(make_snapshot(step, origin=origin, files=files, txtname=f"n{n}"))
    return docs


@pytest.fixture
def java_session() -> Iterator[tuple[Any, str]]:
    """A driver session on a fresh keyspace created with the Java service's exact DDL."""
    if not cassandra_target():
        pytest.skip(CASSANDRA_SKIP)
    from cassandra.cluster import Cluster

    host, _, port = cassandra_target().partition(":")
    cluster = Cluster([host], port=int(port or 9042), protocol_version=4)
    session = cluster.connect()
    session.default_timeout = 120  # schema changes on a busy test node take more than 10 s
    keyspace = random_keyspace("java_")
    session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1};"
    )
    session.set_keyspace(keyspace)
    for statement in JAVA_DDL:
        session.execute(statement)
    try:
        yield session, keyspace
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        cluster.shutdown()


def _java_save(session: Any, doc: Document) -> None:
    """DataService.saveSnapshot: every file with content stored once per MD5 in 1 MiB
    chunks with random UUID ids; the snapshot XML with contents emptied; the index rows."""
    snapshot_id = doc["$uniqueid"][0]
    stored = Document({name: list(values) for name, values in doc.items()})
    files = {}
    for name, values in doc["$file"][0].items():
        content_type, content, attributes = values
        if content:
            md5 = hashlib.md5(content).hexdigest().upper()
            known = session.execute("SELECT md5 FROM documents WHERE md5 = %s LIMIT 1", [md5])
            if not list(known):
                for sort_id, start in enumerate(range(0, len(content), MiB)):
                    data_id = str(uuid.uuid4())
                    chunk = content[start : start + MiB]
                    session.execute(
                        "INSERT INTO documents_data (data_id, data) VALUES (%s, %s)",
                        [data_id, chunk],
                    )
                    session.execute(
                        "INSERT INTO documents (md5, sort_id, data_id) VALUES (%s, %s, %s)",
                        [md5, sort_id, data_id],
                    )
            session.execute(
                "INSERT INTO snapshots_by_document (md5, snapshot) VALUES (%s, %s)",
                [md5, snapshot_id],
            )
        files[name] = [content_type, b"", attributes]
    stored["$file"] = [files]
    session.execute(
        "INSERT INTO snapshots_by_uniqueid (uniqueid, snapshot) VALUES (%s, %s)",
        [snapshot_id.rsplit("-", 1)[0], snapshot_id],
    )
    day = doc["$modified"][0].astimezone(dt.UTC).date()
    session.execute(
        "INSERT INTO snapshots_by_modified (modified, snapshot) VALUES (%s, %s)",
        [day, snapshot_id],
    )
    session.execute(
        "INSERT INTO snapshots (snapshot, data) VALUES (%s, %s)", [snapshot_id, to_xml(stored)]
    )


def _java_load(session: Any, snapshot_id: str) -> Document:
    """DataService.loadSnapshot + loadFileData: the XML, then each file's content by its
    md5checksum attribute, chunk by chunk in sort_id order."""
    row = session.execute("SELECT data FROM snapshots WHERE snapshot = %s", [snapshot_id]).one()
    assert row is not None, f"Java finds no snapshots row {snapshot_id}"
    doc = read_xml_document(row[0])
    if "$file" not in doc:
        return doc
    merged = {}
    for name, values in doc["$file"][0].items():
        content_type, content, attributes = values[0], values[1], values[2]
        checksum = (attributes.get("md5checksum") or [""])[0]
        if not content and checksum:
            chunks = session.execute(
                "SELECT data_id FROM documents WHERE md5 = %s ORDER BY sort_id", [checksum]
            )
            parts = []
            for (data_id,) in chunks:
                piece = session.execute(
                    "SELECT data FROM documents_data WHERE data_id = %s", [data_id]
                ).one()
                assert piece is not None, f"Java misses piece {data_id} of {name}"
                parts.append(piece[0])
            content = b"".join(parts)
            assert hashlib.md5(content).hexdigest().upper() == checksum
        merged[name] = [content_type, content, attributes]
    doc["$file"] = [merged]
    return doc


def _equal_with_files(loaded: Document, original: Document, *, but: str = "$file") -> None:
    """Equal, files by their bytes; ``but``: an item left out as well (the workflow saves
    a restored snapshot as any document, ``$modified`` stamped anew, as the engine does)."""
    assert file_hashes(loaded) == file_hashes(original)
    left_out = {"$file", but}
    without = {name: values for name, values in original.items() if name not in left_out}
    assert {name: values for name, values in loaded.items() if name not in left_out} == without


def test_a_java_keyspace_opens_in_place_reads_verifies_and_restores(
    java_session: tuple[Any, str], double: WorkflowDouble
) -> None:
    session, keyspace = java_session
    docs = _snapshots()
    for doc in docs:
        _java_save(session, doc)
    store = open_cassandra(keyspace)  # upgrades in place: adds the archive_* tables
    try:
        tables = set(store._session.keyspace_tables(keyspace))
        assert tables == {t.name for t in TABLES}
        with Archive(store) as archive:
            for doc in docs:
                _equal_with_files(archive.load(doc["$uniqueid"][0]), doc)
            report = verify(store)
            assert report.problems == []
            with WorkflowClient(double.url, read_timeout=30) as client:
                restorer = Restorer(archive, client)
                for doc in docs:
                    assert restorer.restore_snapshot(doc["$uniqueid"][0]) is True
            for doc in docs:
                _equal_with_files(double.snapshots[doc["$uniqueid"][0]], doc, but="$modified")
    finally:
        store.close()


def test_what_this_archive_writes_java_reads(java_session: tuple[Any, str]) -> None:
    session, keyspace = java_session
    docs = _snapshots()
    store = open_cassandra(keyspace)
    try:
        with Archive(store) as archive:
            for doc in docs:
                archive.store(doc)
    finally:
        store.close()
    for doc in docs:
        loaded = _java_load(session, doc["$uniqueid"][0])
        for entry in iter_files(loaded):
            if entry.name == "link.url":
                assert entry.content == b""
        _equal_with_files(loaded, doc)


def test_a_day_only_java_stored_is_restored_once_the_archive_meets_it(
    java_session: tuple[Any, str], double: WorkflowDouble
) -> None:
    """A day on which only the Java service, writing beside, stored a snapshot (issue 45
    item 2; java-audit-3 N8): a range restore over more than 62 days walks the day index,
    which the Java service does not write, and missed it until the census. Met again (the
    sync's event of it, an import: ``Archive.store`` of a snapshot held already), its day
    is in the index at once, and the range restore posts it."""
    session, keyspace = java_session
    ours, javas = (
        make_snapshot(step, origin=origin, files={"a.txt": b"x"}, modified=when)
        for step, origin, when in (
            (0, ORIGINS[0], dt.datetime(2023, 5, 1, 9, tzinfo=dt.UTC)),
            (1, ORIGINS[1], dt.datetime(2024, 3, 1, 9, tzinfo=dt.UTC)),
        )
    )
    _java_save(session, ours)
    store = open_cassandra(keyspace)  # upgrades in place
    two_years = RestoreRange(
        dt.datetime(2023, 1, 1, tzinfo=dt.UTC), dt.datetime(2024, 12, 31, tzinfo=dt.UTC)
    )
    try:
        with Archive(store) as archive, WorkflowClient(double.url, read_timeout=30) as client:
            assert list(two_years.days(archive)) == [dt.date(2023, 5, 1)]  # index built
            _java_save(session, javas)  # the Java service goes on writing beside
            assert list(two_years.days(archive)) == [dt.date(2023, 5, 1)]  # the gap
            assert not archive.store(javas).new  # met again: held already
            assert list(two_years.days(archive)) == [dt.date(2023, 5, 1), dt.date(2024, 3, 1)]
            report = Restorer(archive, client).restore_range(two_years)
            assert (report.restored, report.failed) == (2, {})
            assert javas["$uniqueid"][0] in double.snapshots
    finally:
        store.close()
