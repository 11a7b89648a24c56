"""An archive to verify in slices and parts: snapshots of many process instances, files on
some (each its own content, several pieces on a few), and a corrupted piece on demand."""

from __future__ import annotations

import random

from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_PIECE_REFS, DOCUMENTS_DATA
from support.damage import flip_stored_bit
from support.snapshots import make_snapshot


def fill(archive: Archive, instances: int = 40, seed: int = 3) -> None:
    rng = random.Random(seed)
    for instance in range(instances):
        origin = f"{rng.getrandbits(32):08x}-aaaa-4bbb-8ccc-{instance:012x}"
        for step in range(3):
            files = None
            if step == 1:
                size = 300_000 if instance % 10 == 0 else rng.randrange(100, 5000)
                files = {f"f{instance}.bin": rng.randbytes(size)}
            archive.store(make_snapshot(step + 10 * instance, origin=origin, files=files))


def corrupt_a_piece(backend: Backend, seed: int = 1) -> str:
    """Flip a bit of one piece a file uses; its id."""
    ids = sorted(row["data_id"] for row in backend.scan(ARCHIVE_PIECE_REFS, columns=["data_id"]))
    data_id = random.Random(seed).choice(ids)
    flip_stored_bit(backend, DOCUMENTS_DATA, {"data_id": data_id}, random.Random(seed))
    return data_id
