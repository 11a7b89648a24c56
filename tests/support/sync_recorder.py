"""What SQLite itself syncs: a layer to the files (an APSW VFS over the system's) that
records each file's fsync, for tests of durability that SQLite, not the archive, performs.
A store opened with ``Tuning(vfs=recorder.name)`` goes through it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count

import apsw

_names = count()


class SyncRecorder(apsw.VFS):
    """Passes everything to the system's layer; ``synced`` lists the path of every file
    synced, in order."""

    def __init__(self) -> None:
        self.name = f"recording-{next(_names)}"
        self.synced: list[str] = []
        super().__init__(self.name, "")

    def xOpen(self, name: str | apsw.URIFilename | None, flags: list[int]) -> apsw.VFSFile:
        return _RecordedFile(self, name, flags)


class _RecordedFile(apsw.VFSFile):
    def __init__(
        self, vfs: SyncRecorder, name: str | apsw.URIFilename | None, flags: list[int]
    ) -> None:
        self.recorder = vfs
        self.path = name.filename() if isinstance(name, apsw.URIFilename) else str(name)
        super().__init__("", name, flags)

    def xSync(self, flags: int) -> None:
        self.recorder.synced.append(self.path)
        super().xSync(flags)


@contextmanager
def recording() -> Iterator[SyncRecorder]:
    recorder = SyncRecorder()
    try:
        yield recorder
    finally:
        recorder.unregister()
