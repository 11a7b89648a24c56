"""Memory per input stays bounded whatever a document holds: a JSON file with a large
attachment is imported with about the memory of the same snapshot as XML (which streams),
not several times its size."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from imixs_archive.document.json_codec import iter_json
from imixs_archive.document.xml_writer import iter_xml
from support.snapshots import make_snapshot

MB = 2**20
PROBE = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def _peak_mb(*args: str) -> int:
    command = [sys.executable, "-m", "imixs_archive", "import", *args]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *command], capture_output=True, timeout=300, check=True
    )
    return int(done.stdout.decode().strip())


@pytest.mark.slow
def test_a_json_import_streams_its_attachments(tmp_path: Path) -> None:
    content = random.Random(5).randbytes(60 * MB)
    for suffix, writer in ((".json", iter_json), (".xml", iter_xml)):
        doc = make_snapshot(0 if suffix == ".json" else 1, files={"big.bin": content})
        with (tmp_path / f"big{suffix}").open("wb") as out:
            for piece in writer(doc):
                out.write(piece)
    xml_peak = _peak_mb(str(tmp_path / "big.xml"), "--data-dir", str(tmp_path / "x"))
    json_peak = _peak_mb(str(tmp_path / "big.json"), "--data-dir", str(tmp_path / "j"))
    assert json_peak < xml_peak + 40, (json_peak, xml_peak)
