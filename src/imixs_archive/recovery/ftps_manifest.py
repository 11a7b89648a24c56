"""What each file of an FTPS backup tree holds, and the record of it kept compact.

The record is lines ``path<TAB>snapshot id`` (the last line of a path wins) in the tree's
root: the **live log** ``.imixs-archive-backup``, to which every writer appends a line
(``APPE``) after each file it renamed into place, and **segments**
``.imixs-archive-backup.d/<UTC time>-<random>[+...]``, read before it, in name order.

A compaction (:func:`compact`) turns a long record into one line per path:

1. the live log is renamed to a new segment (writers appending after that start a new live
   log; an append in flight at the rename lands in the segment, whose size is checked
   against what was read);
2. every segment is read, in name order;
3. their merge, one line per path, is written as ``<last segment>+`` (as ``.part`` first,
   then renamed: whole or absent), which sorts right after its last input and before any
   segment rotated later;
4. the inputs are deleted.

A kill anywhere leaves the inputs, or the inputs and their merge (the same lines in the
same order): nothing is lost, and the next compaction merges what is left. Two at once:
each merges what it listed; one that finds an input gone (the other merged and deleted it)
stops and deletes nothing. Segments of two processes sort by the time of their rotation, so
the clocks of processes sharing a target must agree to within the time between two
compactions. The Java restore never reads the folder (it holds no month folders).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ftplib
import io
import secrets
from dataclasses import dataclass, field

MANIFEST = ".imixs-archive-backup"
RECORD = ".imixs-archive-backup.d"
"""The folder of the record's segments, beside the live log in the root."""
COMPACT_AT = 10_000
"""Lines of the record (about 1 MB) below which it is never compacted."""


@dataclass
class Record:
    held: dict[str, str]
    """``path -> snapshot id``, the last line of each path."""
    lines: int
    """Lines read: what a compaction would shrink to ``len(held)``."""

    def too_long(self, compact_at: int) -> bool:
        return self.lines > max(compact_at, 2 * len(self.held))


@dataclass
class Read:
    lines: int = 0
    sizes: dict[str, int] = field(default_factory=dict)
    """The bytes of each segment read."""


class InputGone(Exception):
    """A segment listed is gone: another compaction merged it."""


def _parse(data: bytes, into: dict[str, str]) -> int:
    """Adds the lines of ``data`` to ``into``; the count of lines. A line cut off by a
    kill (and what was appended to it) is skipped: its file is written again."""
    count = 0
    for line in data.decode("utf-8", "replace").splitlines():
        relative, tab, snapshot_id = line.partition("\t")
        if tab and relative and snapshot_id and "\t" not in snapshot_id:
            into[relative] = snapshot_id
            count += 1
    return count


def _retrieve(ftp: ftplib.FTP, name: str) -> bytes | None:
    """The file ``name`` (from the root); None when it is not there (550)."""
    out = io.BytesIO()
    try:
        ftp.retrbinary(f"RETR {name}", out.write)
    except ftplib.error_perm:
        return None
    return out.getvalue()


def _listed(ftp: ftplib.FTP) -> list[str]:
    """The names in the record's folder (none when there is no folder)."""
    try:
        return sorted(n.rpartition("/")[2] for n in ftp.nlst(RECORD))
    except ftplib.error_perm:
        return []


def segments(ftp: ftplib.FTP) -> list[str]:
    """The record's segments, in name order (the oldest first)."""
    return [n for n in _listed(ftp) if n[:1].isdigit() and not n.endswith(".part")]


def _read_segments(ftp: ftplib.FTP, names: list[str], held: dict[str, str]) -> Read:
    """Adds the segments' lines to ``held`` (``InputGone`` for one gone)."""
    done = Read()
    for name in names:
        data = _retrieve(ftp, f"{RECORD}/{name}")
        if data is None:
            raise InputGone(name)
        done.lines += _parse(data, held)
        done.sizes[name] = len(data)
    return done


def read_record(ftp: ftplib.FTP, root: str) -> Record:
    """The whole record: segments in name order, then the live log (read first, so that a
    compaction rotating it meanwhile leaves its lines in a segment listed after)."""
    ftp.cwd(root)
    live = _retrieve(ftp, MANIFEST) or b""
    for _attempt in range(5):
        held: dict[str, str] = {}
        try:
            done = _read_segments(ftp, segments(ftp), held)
        except InputGone:
            continue  # merged meanwhile: its merge is listed now
        return Record(held, done.lines + _parse(live, held))
    raise ftplib.error_temp("450 the record's segments kept changing while read")


def _rotate(ftp: ftplib.FTP) -> str | None:
    """The live log renamed to a new segment (its name); None when there is none."""
    with contextlib.suppress(ftplib.error_perm):  # there already
        ftp.mkd(RECORD)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    name = f"{stamp}-{secrets.token_hex(4)}"
    try:
        ftp.rename(MANIFEST, f"{RECORD}/{name}")
    except ftplib.error_perm:
        return None
    return name


def _settled(ftp: ftplib.FTP, name: str, read: int) -> bool:
    """True when the rotated segment holds what was read (an append in flight at the
    rotation has ended)."""
    try:
        return ftp.size(f"{RECORD}/{name}") == read
    except ftplib.error_perm:  # a server without SIZE: the read came long after the rename
        return True


def _read_inputs(ftp: ftplib.FTP, inputs: list[str], rotated: str | None) -> dict[str, str]:
    """The inputs' lines (``InputGone`` when one is gone, or the rotated log still grows)."""
    for _attempt in range(5):
        held: dict[str, str] = {}
        done = _read_segments(ftp, inputs, held)
        if rotated is None or _settled(ftp, rotated, done.sizes[rotated]):
            return held
    raise InputGone(f"{rotated} (still written to)")


def compact(ftp: ftplib.FTP, root: str) -> Record | None:
    """Compact the record (the steps in the module's text); the record as merged, or None
    when another compaction took an input first (nothing deleted) or there was nothing to
    merge."""
    ftp.cwd(root)
    rotated = _rotate(ftp)
    inputs = segments(ftp)
    if rotated not in inputs:
        rotated = None  # merged and deleted by another compaction already
    if rotated is None and len(inputs) < 2:
        return None
    try:
        held = _read_inputs(ftp, inputs, rotated)
    except InputGone:
        return None
    merge = f"{RECORD}/{inputs[-1]}+"
    text = "".join(f"{path}\t{snapshot_id}\n" for path, snapshot_id in held.items())
    ftp.storbinary(f"STOR {merge}.part", io.BytesIO(text.encode()))
    ftp.rename(f"{merge}.part", merge)
    for name in inputs:
        with contextlib.suppress(ftplib.error_perm):  # another compaction deleted it
            ftp.delete(f"{RECORD}/{name}")
    _remove_cut_merges(ftp)
    return Record(held, len(held))


def _remove_cut_merges(ftp: ftplib.FTP) -> None:
    """The ``.part`` a killed compaction left (one running now loses its own, deletes
    nothing and is tried again)."""
    for name in _listed(ftp):
        if name.endswith(".part"):
            with contextlib.suppress(ftplib.error_perm):
                ftp.delete(f"{RECORD}/{name}")
