"""The books' contract (``storage/books.py``) on every backend: on a table of text books
(``archive_checks``) and on one that keeps its JSON as bytes (``archive_census``), and the
lease on top of them."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.books import Books
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import ARCHIVE_CENSUS, ARCHIVE_CHECKS, Table
from imixs_archive.timezones import now_ms

MINUTE = 60_000


@pytest.mark.parametrize("table", [ARCHIVE_CHECKS, ARCHIVE_CENSUS], ids=lambda t: t.name)
def test_a_book_is_written_read_set_by_compare_and_set_and_dropped(
    backend: Backend, table: Table
) -> None:
    books = Books(backend, table)
    assert books.text("job/1/1") is None and books.read("job/1/1") is None
    books.write("job/1/1", {"walk": 1, "after": "ü"})
    text = json.dumps({"walk": 1, "after": "ü"})
    assert books.text("job/1/1") == text and books.read("job/1/1") == {"walk": 1, "after": "ü"}
    [row] = backend.scan(table)
    stored = row[table.columns[1].name]
    assert stored == (text.encode() if table is ARCHIVE_CENSUS else text)  # as laid out
    assert books.open("job/1/1", {"walk": 2}) == text  # there: left as it is
    assert books.open("job/2/2", "[1]") is None and books.text("job/2/2") == "[1]"
    assert books.read("job/2/2") is None  # not an object
    assert not books.turn("job/1/1", "{}", {"walk": 3})
    assert books.turn("job/1/1", text, {"walk": 3}) and books.read("job/1/1") == {"walk": 3}
    books.write("other", "not JSON")
    assert books.read("other") is None and books.text("other") == "not JSON"
    assert books.names("job/") == ["job/1/1", "job/2/2"] and books.names("x") == []
    books.drop("job/1/1")
    assert books.text("job/1/1") is None and books.names("") == ["job/2/2", "other"]


def test_a_book_of_damaged_bytes_is_read_as_damaged_and_can_be_set_over(
    backend: Backend,
) -> None:
    """Bytes that are not UTF-8 (a damaged row) read as a book that is no JSON object, and
    a compare and set on the text read matches them: the book is begun again (a text
    with replacement characters could never match, and the book stayed as it was)."""
    backend.put(ARCHIVE_CENSUS, [{"name": "store", "data": b'{"files": \xff1}'}])
    books = Books(backend, ARCHIVE_CENSUS)
    text = books.text("store")
    assert text is not None and books.read("store") is None
    assert books.turn("store", text, {"files": 1}) and books.read("store") == {"files": 1}


def _dead_holder() -> str:
    """A lease holder that was a process of this machine and is gone."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                           capture_output=True, text=True)  # fmt: skip
    return f"someone@{socket.gethostname()}:{int(child.stdout)}:x"


def test_a_lease_is_held_by_one_holder_until_it_runs_out_or_is_given_up(
    backend: Backend,
) -> None:
    books, now = Books(backend, ARCHIVE_CHECKS), now_ms()
    assert books.take_lease("lease", "a@elsewhere:1:a", MINUTE, now=now) == ""
    assert books.take_lease("lease", "b@elsewhere:2:b", MINUTE, now=now + 1) == "a@elsewhere:1:a"
    taken = books.text("lease")
    assert books.take_lease("lease", "a@elsewhere:1:a", MINUTE, now=now + 20_000) == ""
    assert books.text("lease") == taken  # more than half of it left: not written again
    assert books.take_lease("lease", "a@elsewhere:1:a", MINUTE, now=now + 40_000) == ""
    assert books.read("lease") == {"holder": "a@elsewhere:1:a", "until": now + 100_000}
    assert books.take_lease("lease", "b@elsewhere:2:b", MINUTE, now=now + 100_001) == ""
    books.release_lease("lease", "a@elsewhere:1:a")  # not its lease any more: kept
    assert books.read("lease") == {"holder": "b@elsewhere:2:b", "until": now + 160_001}
    books.release_lease("lease", "b@elsewhere:2:b")
    assert books.read("lease") == {"holder": "", "until": 0}
    assert books.take_lease("lease", "a@elsewhere:1:a", MINUTE) == ""  # at once
    books.write("lease", "damaged")
    assert books.take_lease("lease", "b@elsewhere:2:b", MINUTE) == ""  # taken over


def test_a_lease_of_a_process_that_is_gone_is_free_at_once_unless_waited_out(
    backend: Backend,
) -> None:
    books, dead = Books(backend, ARCHIVE_CHECKS), _dead_holder()
    assert books.take_lease("lease", dead, MINUTE) == ""
    assert books.take_lease("lease", "b@elsewhere:2:b", MINUTE, free_when_gone=False) == dead
    assert books.take_lease("lease", "b@elsewhere:2:b", MINUTE) == ""


class _Late(DelegatingBackend):
    """A store where another process writes the lease between this one's read (which
    finds none) and its write unless there."""

    other = "b@elsewhere:2:b"

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        found = super().get(table, key, columns)
        if found is None and self.other:
            Books(self.inner, table).write(key["name"], {"holder": self.other, "until": 2**50})
            self.other = ""
        return found


def test_a_lease_lost_to_a_process_that_took_it_at_once_names_that_process(
    backend: Backend,
) -> None:
    books = Books(_Late(backend), ARCHIVE_CHECKS)
    assert books.take_lease("lease", "a@elsewhere:1:a", MINUTE) == "b@elsewhere:2:b"
