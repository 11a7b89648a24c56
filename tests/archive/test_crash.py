"""Writes survive a crash at any point: the next run completes what the last one began."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.crashing import Crash, DyingBackend
from support.snapshots import ORIGIN, content_of, make_snapshot

PDF = random.Random(1).randbytes(600_000)


def _docs() -> list[Document]:
    own = random.Random(9).randbytes(300_000)
    return [
        make_snapshot(0, files={"a.pdf": PDF}),
        make_snapshot(1, files={"a.pdf": PDF, "b.bin": own}),
        make_snapshot(2, files={"b.bin": own}, dollar_snapshot__history=2),
    ]


def _writes_needed(tmp_path: Path) -> int:
    with SQLiteBackend(tmp_path / "probe") as store:
        counting = DyingBackend(store)
        archive = Archive(counting)
        for doc in _docs():
            archive.store(doc)
        archive.delete(_docs()[2]["$uniqueid"][0])
        return len(counting.writes)


def test_a_crash_at_every_write_is_completed_by_the_next_run(tmp_path: Path) -> None:
    total = _writes_needed(tmp_path)
    assert total > 20
    for crash_at in range(1, total + 1):
        with SQLiteBackend(tmp_path / f"s{crash_at}") as store:
            crashing = Archive(DyingBackend(store, crash_at))
            with pytest.raises(Crash):
                for doc in _docs():
                    crashing.store(doc)
                crashing.delete(_docs()[2]["$uniqueid"][0])
            archive = Archive(store)
            for doc in _docs():
                archive.store(doc)
            archive.delete(_docs()[2]["$uniqueid"][0])
            survivors = archive.list_instance(ORIGIN)
            assert survivors == [_docs()[1]["$uniqueid"][0]], crash_at
            assert content_of(archive.load(survivors[0]), "b.bin") == content_of(
                _docs()[1], "b.bin"
            )
            report = verify(store)
            assert report.ok, (crash_at, report.problems)


def _write_inputs(folder: Path, instances: int = 6, steps: int = 5) -> list[Document]:
    rng = random.Random(42)
    docs: list[Document] = []
    for instance in range(instances):
        origin = f"{instance:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        carried = rng.randbytes(rng.randint(50_000, 1_500_000))
        for step in range(steps):
            files = {
                "carried.pdf": carried,
                f"new-{step}.bin": rng.randbytes(rng.randint(1_000, 400_000)),
            }
            doc = make_snapshot(step, origin=origin, files=files)
            docs.append(doc)
            (folder / f"{origin}-{step}.xml").write_bytes(to_xml(doc))
    return docs


def _import(
    folder: Path, store: Path, *, errors: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "imixs_archive",
        "import",
        str(folder),
        "--data-dir",
        str(store),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)


@pytest.mark.slow
def test_sigkill_during_bulk_import_then_rerun(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    docs = _write_inputs(inputs)
    started = time.monotonic()
    assert _import(inputs, tmp_path / "reference").wait(timeout=300) == 0
    full_run = time.monotonic() - started

    store = tmp_path / "store"
    rng = random.Random(3)
    for _ in range(6):
        process = _import(inputs, store)
        time.sleep(rng.uniform(0.05, max(0.1, full_run * 0.9)))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    final = _import(inputs, store, errors=subprocess.PIPE)
    _out, err = final.communicate(timeout=300)
    assert final.returncode == 0, err.decode()

    with SQLiteBackend(store) as backend:
        archive = Archive(backend)
        for doc in docs:
            assert archive.load(doc["$uniqueid"][0]) == doc
        report = verify(backend)
        assert report.ok, report.problems
