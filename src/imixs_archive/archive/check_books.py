"""The books of the jobs that stop and go on and of the scrub (``archive_checks``): small
JSON documents by name, with leases (``storage/books.py``, the contract every wing's books
share).

What each book holds is up to the jobs that stop and go on (``archive/part_runs.py``),
``archive/scrub.py`` and ``archive/last_runs.py``; this module only names their table.
"""

from __future__ import annotations

from imixs_archive.storage.base import Backend
from imixs_archive.storage.books import Books
from imixs_archive.storage.model import ARCHIVE_CHECKS


class CheckBooks(Books):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend, ARCHIVE_CHECKS)
