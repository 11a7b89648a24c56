"""What every command gets: settings, the open store and the archive over it; shared
options and output helpers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.storage.base import Backend


@dataclass
class Context:
    settings: Settings
    backend: Backend
    archive: Archive


def store_options() -> argparse.ArgumentParser:
    """Options every command that opens the store takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir", type=Path, help="embedded store folder (env ARCHIVE_DATA_DIR)"
    )
    return common


@contextmanager
def output(path: Path | None) -> Iterator[IO[bytes]]:
    """Standard output, or a file that appears only once it is complete."""
    if path is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    partial = path.with_name(path.name + ".part")
    try:
        with partial.open("wb") as out:
            yield out
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
