"""Every bad document is one clear error and the batch goes on (CLI import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from imixs_archive.document.json_codec import to_json
from imixs_archive.document.xml_writer import to_xml
from support.snapshots import make_snapshot

DEEP = 900
BAD = {
    "a-deep.json": ('{"item":[{"name":"a","value":' + "[" * DEEP + "]" * DEEP + "}]}").encode(),
    "b-deep-map.json": (
        '{"item":[{"name":"a","value":' + '{"a":' * DEEP + "1" + "}" * DEEP + "}]}"
    ).encode(),
    "c-ebcdic.xml": b'<?xml version="1.0" encoding="EBCDIC-XYZ"?><document/>',
    "d-rot13.xml": b'<?xml version="1.0" encoding="rot13"?><document/>',
}


def _import(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "imixs_archive", "import", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_bad_files_fail_alone_and_the_batch_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name, body in BAD.items():
        (folder / name).write_bytes(body)
    (folder / "z-good.xml").write_bytes(to_xml(make_snapshot(0)))
    done = _import(str(folder), "--data-dir", str(tmp_path / "store"))
    assert done.returncode == 3, done.stderr  # every failure is bad input: its code
    assert b"Traceback" not in done.stderr
    assert b"1 new, 0 already present, 4 failed" in done.stdout
    err = done.stderr.decode()
    assert "nested deeper than" in err and "unsupported encoding" in err


def test_json_on_standard_input_is_read_as_json(tmp_path: Path) -> None:
    body = b"\n  " + to_json([make_snapshot(0), make_snapshot(1)])
    done = _import("-", "--data-dir", str(tmp_path / "store"), stdin=body)
    assert done.returncode == 0, done.stderr
    assert b"2 new" in done.stdout
