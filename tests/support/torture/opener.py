"""A process that opens the store, reads one snapshot and closes it, again and again, for a
while: the access pattern that found issue 48's corruption (every CLI reader does the
same, once). Started by the torture as ``python -m support.torture.opener SECONDS MODE
ID...`` with the store's settings in its environment (``MODE``: ``files``, each read with
its files' bytes, or ``bare``, the snapshot's row alone, a shorter turn); prints one line
per read: ``<id> <fingerprint>``, ``<id> missing`` or ``<id> error <message>``."""

from __future__ import annotations

import os
import sys
import time

from imixs_archive.config import load_settings
from imixs_archive.errors import ArchiveError, NotFoundError
from imixs_archive.runtime import open_archive
from support.torture.model import bare_fingerprint, fingerprint


def main(argv: list[str]) -> int:
    seconds, bare, ids = float(argv[0]), argv[1] == "bare", argv[2:]
    settings = load_settings(dict(os.environ))
    deadline = time.monotonic() + seconds
    turn = 0
    while time.monotonic() < deadline and ids:
        sid = ids[turn % len(ids)]
        turn += 1
        try:
            with open_archive(settings, create=False) as archive:
                doc = archive.load(sid, with_files=not bare)
                line = f"{sid} {bare_fingerprint(doc) if bare else fingerprint(doc)}"
        except NotFoundError:
            line = f"{sid} missing"
        except ArchiveError as exc:
            line = f"{sid} error {type(exc).__name__}: {exc}"
        print(line.replace("\n", " "), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
