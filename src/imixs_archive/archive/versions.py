"""The version of the store's layout: what this archive keeps in a store and how (its own
tables, the form of its rows: snapshot rows sealed, pieces packed ...). A version of the
archive that changes the layout raises ``STORE_VERSION``; one that finds a store of a higher
version than it knows refuses it, with a clear message, before it reads or writes anything
(an older archive would misread a newer store, or write rows a newer one no longer reads).

The row (``archive_versions``, name ``store``) is written when an archive that may write
opens a store without it (a new store, or one an earlier version or the Java service made)
or with a lower version (after upgrading what needs it: nothing so far); a command that only
reads writes nothing.

Versions: 1, the seals of snapshot rows and the archive_versions row itself; 2, the ledger
(its tables; every store and delete of a snapshot, every hold placed or released, queues an
entry: an archive of version 1 writing into the store would leave changes no entry logs);
3, the snapshots' facts (``archive/facts.py``: written with every snapshot, passed on by
every delete: an archive of version 2 writing into the store would leave the kept figures
off until a ``stats --reconcile``); 4, files stored in the Java service's 1 MiB cuts with
the digest the ledger logs of them apart (``archive_file_cuts``: an archive of version 3
would take the digest over such a file's pieces for that one, and its ledger verify would
report the file changed); 5, legal holds per case (``archive_legal_hold_cases``); 6, the
ledger's tree kept as tiles (``archive_ledger_tiles``, ``ledger/tiles.py``: an archive of
version 5 sequencing into the store would write only the old node rows, and the head it
wrote would no longer say how far the tiles go, so they would be derived again).
"""

from __future__ import annotations

from imixs_archive import __version__
from imixs_archive.document.conventions import METADATA_ID
from imixs_archive.errors import StoreError
from imixs_archive.ledger.books import BEFORE_LEDGER, LedgerBooks
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_VERSIONS, SNAPSHOTS
from imixs_archive.timezones import now_ms

STORE_VERSION = 6
LEDGER_VERSION = 2
KEY = {"name": "store"}


def check_store_version(backend: Backend, *, record: bool) -> int:
    """The store's layout version (0: not recorded yet); a StoreError for one newer than
    this archive knows. ``record``: write this version where it is missing or lower."""
    row = backend.get(ARCHIVE_VERSIONS, KEY)
    found = int(row["version"]) if row is not None else 0
    if found > STORE_VERSION:
        by = f" by imixs-archive {row['written_by']}" if row and row["written_by"] else ""
        raise StoreError(
            f"the store was written{by} in a newer layout (version {found}; this version, "
            f"imixs-archive {__version__}, knows up to {STORE_VERSION}): upgrade imixs-archive "
            "to use it (nothing was read or changed)"
        )
    if record and found < STORE_VERSION:
        if found < LEDGER_VERSION and _holds_snapshots(backend):
            # Stored before the ledger: not logged, and not tampering (``ledger init``).
            note = {"from_version": found, "since": now_ms()}
            LedgerBooks(backend).head.write(BEFORE_LEDGER, note)
        row = {**KEY, "version": STORE_VERSION, "written_by": __version__}
        backend.put(ARCHIVE_VERSIONS, [row])
    return found


def _holds_snapshots(backend: Backend) -> bool:
    rows = backend.scan(SNAPSHOTS, columns=["snapshot"], limit=2)
    return any(row["snapshot"] != METADATA_ID for row in rows)
