"""What the analytics count of each snapshot, kept when it is stored
(``archive_snapshot_facts``, a row per snapshot in its UTC day's partition).

A fact holds a snapshot's quarter-hour of ``$modified`` within the UTC day the index
files it under, its dimension values (``DIMENSIONS``), the attachment bytes it carries
(``logical``: each file's stored size, a file in ten snapshots ten times), the files it
brought into the archive (``new_files``: key -> size) and whether it brought its process
instance (``first``). Day figures are sums of the day's facts: counting a day reads one
partition and parses no XML, whatever the archive holds.

**Who brought what.** When a snapshot is stored, a file is new when no other snapshot
refers to its key, and the instance is new when no other snapshot of it is indexed. When
a snapshot is deleted, what it brought passes to another snapshot that still carries the
file (or belongs to the instance), whose fact is rewritten and whose day is stamped. So
at any time every file in use is new in exactly one fact, and every instance first in
exactly one: the sums over all days are the files and instances the archive holds. On
SQLite all of this happens in the snapshot's own transaction. On Cassandra two processes
storing the first two snapshots of one instance (or file) at the same moment may both
count it, and a process that dies between a snapshot's row and its fact leaves the fact
to be written when the day is next counted: the reconcile (``stats --reconcile``) finds
and repairs such drift, as it does for snapshots the Java service wrote (they have no
fact until one is counted from their XML: :func:`repair_fact`).

**Order.** A fact is written after its snapshot's row, and a delete removes it before
anything else: a fact always names a complete snapshot. An id in the day's index without
a fact is being written or deleted, died part-way, or came from the Java service.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from imixs_archive.archive.days import stamp_day
from imixs_archive.archive.snapshot_reads import is_archived
from imixs_archive.document.conventions import (
    is_snapshot_id,
    iter_files,
    modified_time,
    origin_id,
    snapshot_order,
    snapshot_time,
)
from imixs_archive.document.labels import label
from imixs_archive.document.model import Document
from imixs_archive.errors import StoreError
from imixs_archive.filestore.reading import EMPTY_MD5
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_SNAPSHOT_FACTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_UNIQUEID,
    Table,
)

log = logging.getLogger(__name__)

DIMENSIONS: dict[str, tuple[str, ...]] = {
    "type": ("type",),
    "group": ("$workflowgroup",),
    "status": ("$workflowstatus",),
    "task": ("$taskid",),
    "creator": ("$creator", "namcreator"),
}
"""Dimension name -> the items it reads, first non-empty wins."""
SLOT_MINUTES = 15
SLOTS_PER_DAY = 24 * 60 // SLOT_MINUTES


def dimension_labels(doc: Document) -> dict[str, str]:
    """The value of every dimension for one snapshot (first value, as text; ``""``)."""
    labels: dict[str, str] = {}
    for dimension, items in DIMENSIONS.items():
        labels[dimension] = ""
        for item in items:
            text = label(doc.get_first(item))
            if text:
                labels[dimension] = text
                break
    return labels


@dataclass(frozen=True)
class Fact:
    slot: int
    labels: tuple[str, ...]
    """In the order of ``DIMENSIONS``."""
    logical: int
    new_files: dict[str, int] = field(default_factory=dict)
    first: bool = False

    @property
    def new_bytes(self) -> int:
        return sum(self.new_files.values())

    def label_map(self) -> dict[str, str]:
        return dict(zip(DIMENSIONS, self.labels, strict=True))

    def encode(self) -> bytes:
        data = [self.slot, list(self.labels), self.logical, self.new_files, int(self.first)]
        return json.dumps(data, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> Fact:
        slot, labels, logical, new_files, first = json.loads(data)
        if len(labels) != len(DIMENSIONS):
            raise ValueError("a fact of other dimensions")
        return cls(
            int(slot),
            tuple(str(v) for v in labels),
            int(logical),
            {str(k): int(v) for k, v in new_files.items()},
            bool(first),
        )


def slot_in_day(doc: Document, day: dt.date) -> int:
    """The quarter-hour of ``$modified`` within the UTC day the index files it under."""
    try:
        modified = modified_time(doc).astimezone(dt.UTC)
    except ValueError:
        return 0
    if modified.date() != day:
        return 0 if modified.date() < day else SLOTS_PER_DAY - 1
    return (modified.hour * 60 + modified.minute) // SLOT_MINUTES


class Carriers:
    """Instances and file keys this process stored a snapshot of lately, with that
    snapshot's id (bounded: the oldest go first). While that snapshot is there, a new one
    of the instance, or carrying the file, brought neither. A delete by this process
    forgets what the deleted snapshot carried; one by another process (retention, a
    delete beside a long import or the sync) is found where reads are local (SQLite: one
    index row read, in the snapshot's transaction); on Cassandra the memory is trusted,
    a round trip saved, and a count left off by such a delete is repaired by the
    reconcile."""

    def __init__(self, capacity: int = 100_000) -> None:
        self._by: OrderedDict[str, str] = OrderedDict()
        self._capacity = capacity

    def other_than(self, key: str, snapshot_id: str) -> bool:
        """True when a snapshot other than ``snapshot_id`` carried ``key`` here."""
        carrier = self._by.get(key)
        return carrier is not None and carrier != snapshot_id

    def still_other_than(
        self, backend: Backend, table: Table, partition: Mapping[str, object], snapshot_id: str
    ) -> bool:
        """:meth:`other_than` for the key ``partition`` names, checked in ``table`` where
        reads are local: a carrier another process deleted is forgotten."""
        (key,) = partition.values()
        assert isinstance(key, str)
        if not self.other_than(key, snapshot_id):
            return False
        carrier = self._by[key]
        if not backend.local_reads or backend.get(table, {**partition, "snapshot": carrier}):
            return True
        self.forget([key], carrier)
        return False

    def note(self, keys: Iterable[str], snapshot_id: str) -> None:
        for key in keys:
            self._by[key] = snapshot_id
            self._by.move_to_end(key)
        while len(self._by) > self._capacity:
            self._by.popitem(last=False)

    def forget(self, keys: Iterable[str], snapshot_id: str) -> None:
        for key in keys:
            if self._by.get(key) == snapshot_id:
                del self._by[key]


def count_fact(
    backend: Backend,
    snapshot_id: str,
    doc: Document,
    day: dt.date,
    keys: Mapping[str, str],
    known: Mapping[str, int] | None = None,
    carriers: Carriers | None = None,
) -> Fact:
    """The fact of a snapshot whose rows are written (``keys``: file name -> stored key;
    ``known``: sizes of keys the caller knows, not read again): what it brought is what
    no other snapshot refers to (``carriers``: what this process knows of that)."""
    carriers = carriers or Carriers(0)
    origin = origin_id(snapshot_id)
    sizes = file_sizes(backend, doc, keys, known)
    logical = logical_bytes(doc, keys, sizes)
    new_files = {
        key: size
        for key, size in sorted(sizes.items())
        if key != EMPTY_MD5  # not stored: no snapshot brings it (and it has no references)
        and not carriers.still_other_than(backend, SNAPSHOTS_BY_DOCUMENT, {"md5": key}, snapshot_id)
        and not _any_other(backend, SNAPSHOTS_BY_DOCUMENT, {"md5": key}, snapshot_id)
    }
    by_instance = {"uniqueid": origin}
    first = not carriers.still_other_than(
        backend, SNAPSHOTS_BY_UNIQUEID, by_instance, snapshot_id
    ) and not _any_other(backend, SNAPSHOTS_BY_UNIQUEID, by_instance, snapshot_id)
    carriers.note([origin, *sizes], snapshot_id)
    labels = dimension_labels(doc)
    return Fact(slot_in_day(doc, day), tuple(labels.values()), logical, new_files, first)


def logical_bytes(doc: Document, keys: Mapping[str, str], sizes: Mapping[str, int]) -> int:
    """The attachment bytes a snapshot carries: each file's stored size (``sizes`` by key,
    :func:`file_sizes`), a file named twice counted twice."""
    return sum(sizes.get(keys.get(entry.name, ""), 0) for entry in iter_files(doc))


def file_sizes(
    backend: Backend,
    doc: Document,
    keys: Mapping[str, str],
    known: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Stored key -> size of a snapshot's files: as stored (``known``, else read), else (a
    file the Java service wrote) the ``size`` attribute of the first entry naming it, else
    0."""
    sizes: dict[str, int] = {}
    for entry in iter_files(doc):
        key = keys.get(entry.name)
        if key is not None and key not in sizes:
            stored = known[key] if known and key in known else _size(backend, key)
            sizes[key] = stored if stored is not None else entry.size or 0
    return sizes


def put_fact(backend: Backend, day: dt.date, snapshot_id: str, fact: Fact) -> None:
    backend.put(
        ARCHIVE_SNAPSHOT_FACTS, [{"day": day, "snapshot": snapshot_id, "data": fact.encode()}]
    )


def day_facts(backend: Backend, day: dt.date) -> dict[str, Fact]:
    """The facts of one UTC day by snapshot id (unreadable ones left out: counted again)."""
    facts: dict[str, Fact] = {}
    for row in backend.scan(ARCHIVE_SNAPSHOT_FACTS, {"day": day}):
        try:
            facts[row["snapshot"]] = Fact.decode(row["data"])
        except (ValueError, TypeError, KeyError):
            continue
    return facts


def drop_fact(backend: Backend, snapshot_id: str, days: Iterable[dt.date]) -> None:
    """Before a snapshot is deleted: remove its fact and pass what it brought to another
    snapshot carrying the same file or of the same instance (their days are stamped)."""
    found = _find(backend, snapshot_id, days)
    if found is None:
        return
    day, fact = found
    backend.delete(ARCHIVE_SNAPSHOT_FACTS, {"day": day, "snapshot": snapshot_id})
    if fact.first:
        heir = _heir(
            backend, SNAPSHOTS_BY_UNIQUEID, {"uniqueid": origin_id(snapshot_id)}, snapshot_id
        )
        if heir is not None:
            _pass_on(backend, heir, lambda f: replace(f, first=True))
    for key, size in fact.new_files.items():
        heir = _heir(backend, SNAPSHOTS_BY_DOCUMENT, {"md5": key}, snapshot_id)
        if heir is not None:
            _pass_on(backend, heir, _with_file(key, size))


def _heir(
    backend: Backend, table: Table, partition: Mapping[str, object], snapshot_id: str
) -> str | None:
    """Another snapshot of the partition to pass what a deleted one brought to: the next
    after it, else the one before. Reads start at the deleted one: the tombstones of
    earlier deletes before it are never walked, but when nothing comes after it; a read
    the store refuses then finds none (the count may be one off: the reconcile repairs)."""
    bound = {"snapshot": snapshot_id}
    for descending in (False, True):
        try:
            rows = backend.scan(
                table, partition, start_after=bound, descending=descending, limit=3,
                columns=["snapshot"],
            )  # fmt: skip
            heirs = [r["snapshot"] for r in rows if _other(r["snapshot"], snapshot_id)]
        except StoreError as exc:
            log.warning("facts: no heir of %s found (%s)", snapshot_id, exc)
            return None
        if heirs:
            return str(heirs[0])
    return None


def repair_fact(
    backend: Backend, snapshot_id: str, doc: Document, day: dt.date, keys: Mapping[str, str]
) -> Fact:
    """The fact of a complete snapshot that has none (the Java service's, or one whose
    writer died after its row): counted from its XML and written. It brought its instance
    when it is the earliest complete snapshot of it, and a file when no other snapshot
    refers to it."""
    fact = count_fact(backend, snapshot_id, doc, day, keys)
    fact = replace(fact, first=_brought(snapshot_id, EarliestComplete(backend).instance))
    put_fact(backend, day, snapshot_id, fact)
    return fact


def _with_file(key: str, size: int) -> Callable[[Fact], Fact]:
    def change(fact: Fact) -> Fact:
        return replace(fact, new_files={**fact.new_files, key: size})

    return change


def _pass_on(backend: Backend, heir: str, change: Callable[[Fact], Fact]) -> None:
    found = _find(backend, heir, days_about(heir))
    if found is None:
        return  # no fact yet: counted when its day is (the reconcile repairs the rest)
    day, fact = found
    put_fact(backend, day, heir, change(fact))
    stamp_day(backend, day)


def _find(
    backend: Backend, snapshot_id: str, days: Iterable[dt.date]
) -> tuple[dt.date, Fact] | None:
    for day in days:
        row = backend.get(ARCHIVE_SNAPSHOT_FACTS, {"day": day, "snapshot": snapshot_id})
        if row is not None:
            try:
                return day, Fact.decode(row["data"])
            except (ValueError, TypeError, KeyError):
                return None
    return None


def _others(
    backend: Backend,
    table: Table,
    partition: Mapping[str, object],
    snapshot_id: str,
    limit: int | None = 1,
) -> list[str]:
    """Snapshot ids of the partition other than ``snapshot_id``; at most ``limit`` of them
    (one is all a "no other" question needs). A first read of a few rows answers it
    unless markers (``!archive``) or ids of another form fill them."""
    if limit is not None:  # newest first: the live rows before old deletes' tombstones
        rows = list(
            backend.scan(table, partition, limit=limit + 1, columns=["snapshot"], descending=True)
        )
        found = [r["snapshot"] for r in rows if _other(r["snapshot"], snapshot_id)]
        if len(found) >= limit or len(rows) < limit + 1:
            return found[:limit]
    found = []
    for row in backend.scan(table, partition, columns=["snapshot"]):
        if _other(row["snapshot"], snapshot_id):
            found.append(row["snapshot"])
            if limit is not None and len(found) >= limit:
                break
    return found


def _any_other(
    backend: Backend, table: Table, partition: Mapping[str, object], snapshot_id: str
) -> bool:
    """Whether the partition names a snapshot other than ``snapshot_id``. A read the store
    refuses (on Cassandra: more tombstones than a read may walk before another live row,
    the deletes of every earlier snapshot) answers no: the store goes on, and the
    reconcile counts it again should that be wrong."""
    try:
        return bool(_others(backend, table, partition, snapshot_id))
    except StoreError as exc:
        log.warning("facts: %s unread (%s): taken as the first", dict(partition), exc)
        return False


def _other(candidate: str, snapshot_id: str) -> bool:
    return candidate != snapshot_id and is_snapshot_id(candidate)


def _brought(snapshot_id: str, earliest_of: Callable[[str], str | None]) -> bool:
    """Whether a complete snapshot brought its instance: no complete snapshot of it is
    earlier (its own index row may be missing yet)."""
    earliest = earliest_of(origin_id(snapshot_id))
    return earliest is None or snapshot_order(snapshot_id) <= snapshot_order(earliest)


def _size(backend: Backend, key: str) -> int | None:
    row = backend.get(ARCHIVE_FILES, {"md5": key}, ["size"])
    return int(row["size"]) if row is not None else None


def days_about(snapshot_id: str) -> list[dt.date]:
    """The UTC days a snapshot's fact may be filed under: its id's day (when it was taken:
    its ``$modified``) first, then the days beside it."""
    try:
        taken = snapshot_time(snapshot_id).date()
    except (ValueError, OverflowError, OSError):
        return []
    return [taken, taken - dt.timedelta(days=1), taken + dt.timedelta(days=1)]


class EarliestComplete:
    """The earliest complete snapshot (in :func:`snapshot_order`) of a file key (its
    ``snapshots_by_document`` partition) or of a process instance (its
    ``snapshots_by_uniqueid`` partition), by a pass over the partition. An id there
    whose ``snapshots`` row is missing (being written, or left by a writer that died
    part-way) is passed over: it brought nothing. Remembered (bounded), so a partition of
    many snapshots is scanned once per reconcile."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._known: dict[tuple[str, str], str | None] = {}

    def carrier(self, key: str) -> str | None:
        """The earliest complete snapshot carrying the file ``key``."""
        return self._earliest(SNAPSHOTS_BY_DOCUMENT, "md5", key)

    def instance(self, uniqueid: str) -> str | None:
        """The earliest complete snapshot of the process instance ``uniqueid``."""
        return self._earliest(SNAPSHOTS_BY_UNIQUEID, "uniqueid", uniqueid)

    def _earliest(self, table: Table, column: str, value: str) -> str | None:
        known = (table.name, value)
        if known not in self._known:
            if len(self._known) >= 100_000:
                self._known.clear()
            ids = sorted(
                _others(self._backend, table, {column: value}, "", None), key=snapshot_order
            )
            self._known[known] = next((i for i in ids if is_archived(self._backend, i)), None)
        return self._known[known]


def exact_fact(
    backend: Backend,
    snapshot_id: str,
    doc: Document,
    day: dt.date,
    keys: Mapping[str, str],
    earliest: EarliestComplete,
) -> Fact:
    """A snapshot's fact by the rules a whole count applies (``stats --reconcile``): it
    brought its instance when it is the instance's earliest complete snapshot, and a file
    when it is the earliest complete snapshot carrying it."""
    fact = count_fact(backend, snapshot_id, doc, day, keys)
    first = _brought(snapshot_id, earliest.instance)
    sizes = file_sizes(backend, doc, keys)
    new_files = {
        k: s
        for k, s in sorted(sizes.items())
        if k != EMPTY_MD5 and earliest.carrier(k) == snapshot_id
    }
    return replace(fact, first=first, new_files=new_files)


def delete_fact(backend: Backend, day: dt.date, snapshot_id: str) -> None:
    """Remove a fact whose snapshot is gone from the day (a reconcile's cleanup)."""
    backend.delete(ARCHIVE_SNAPSHOT_FACTS, {"day": day, "snapshot": snapshot_id})
