"""The inputs an import names: files, the .xml/.json files below folders, standard input.

Apart from the importer so that the command line can size an import before it loads the
archive (``cli.standby_workers``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from imixs_archive.errors import NotFoundError

SUFFIXES = (".xml", ".json")


@dataclass(frozen=True)
class Source:
    """One input: a file path, or standard input (``-``)."""

    name: str
    path: Path | None
    size: int | None


def find_sources(paths: Iterable[str]) -> list[Source]:
    """Files named, and the .xml/.json files below folders named (sorted)."""
    found: list[Source] = []
    for name in paths:
        if name == "-":
            found.append(Source("<stdin>", None, None))
            continue
        path = Path(name)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
            found.extend(Source(str(p), p, p.stat().st_size) for p in files)
        elif path.is_file():
            found.append(Source(str(path), path, path.stat().st_size))
        else:
            raise NotFoundError(f"{name}: no such file or folder")
    return found
