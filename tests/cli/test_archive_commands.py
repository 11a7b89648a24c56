"""The command line, driven in-process through main() and once as a real process."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.document.json_codec import read_json
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.model import DOCUMENTS_DATA
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import ORIGIN, make_snapshot, numbered_origin

PDF = random.Random(4).randbytes(400_000)
BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<document><item name="x"><value>&lol2;</value></item></document>"""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    (folder / "2023" / "11").mkdir(parents=True)
    for step in range(3):
        doc = make_snapshot(step, files={"a.pdf": PDF})
        (folder / "2023" / "11" / f"snap-{step}.xml").write_bytes(to_xml(doc))
    return folder


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def sid(step: int) -> str:
    return str(make_snapshot(step)["$uniqueid"][0])


def test_import_then_list_get_file(
    capsys: pytest.CaptureFixture[str], store: Path, inputs: Path, tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "import", str(inputs), "--data-dir", str(store))
    assert code == 0 and "3 new, 0 already present, 0 failed" in out
    code, out, _ = run(capsys, "import", str(inputs), "--data-dir", str(store))
    assert "0 new, 3 already present" in out

    code, out, _ = run(capsys, "list", "--uniqueid", ORIGIN, "--data-dir", str(store))
    assert [line.split("\t")[0] for line in out.splitlines()[1:]] == [sid(2), sid(1), sid(0)]
    code, out, _ = run(
        capsys,
        "list",
        "--from",
        "2023-11-01",
        "--to",
        "2023-11-30",
        "--json",
        "--data-dir",
        str(store),
    )
    assert len(out.splitlines()) == 3 and json.loads(out.splitlines()[0])["files"] == 1

    target = tmp_path / "out.pdf"
    md5 = hashlib.md5(PDF).hexdigest()
    assert run(capsys, "file", md5, "-o", str(target), "--data-dir", str(store))[0] == 0
    assert target.read_bytes() == PDF
    assert run(capsys, "file", sid(1), "a.pdf", "-o", str(target), "--data-dir", str(store))[0] == 0
    assert target.read_bytes() == PDF

    xml_out = tmp_path / "snap.xml"
    assert run(capsys, "get", sid(0), "-o", str(xml_out), "--data-dir", str(store))[0] == 0
    assert read_xml_document(xml_out.read_bytes()) == make_snapshot(0, files={"a.pdf": PDF})
    code, out, _ = run(
        capsys, "get", sid(0), "--format", "json", "--no-files", "--data-dir", str(store)
    )
    assert read_json(out)[0]["$file"][0]["a.pdf"][1] == b""


def test_import_skips_bad_files_and_reports_them(
    capsys: pytest.CaptureFixture[str], store: Path, inputs: Path
) -> None:
    (inputs / "broken.xml").write_bytes(b"<document><item name='x'>")
    (inputs / "laughs.xml").write_bytes(BILLION_LAUGHS)
    # (Java's old-format ids such as 156ea588638-ba4de2b are snapshot ids; this is none)
    (inputs / "legacy.xml").write_bytes(
        to_xml(make_snapshot(0, origin="x")).replace(
            f"x-{make_snapshot(0)['$uniqueid'][0].rsplit('-', 1)[1]}".encode(),
            b"ticket-1",
        )
    )
    code, out, err = run(capsys, "import", str(inputs), "--data-dir", str(store))
    assert code == 3  # bad input, as the README's table says
    assert "3 new, 0 already present, 3 failed" in out
    assert "broken.xml" in err and "line" in err
    assert ("laughs.xml" in err and "DTD" in err.upper()) or "DOCTYPE" in err.upper()
    assert "Traceback" not in err


def test_delete_verify_stats(capsys: pytest.CaptureFixture[str], store: Path, inputs: Path) -> None:
    run(capsys, "import", str(inputs), "--data-dir", str(store))
    code, out, _ = run(capsys, "verify", "--data-dir", str(store))
    assert code == 0 and "clean" in out
    code, out, _ = run(capsys, "stats", "--json", "--data-dir", str(store))
    stats = json.loads(out)
    assert (
        stats["snapshots"] == 3 and stats["files"] == 1 and stats["logical_bytes"] == 3 * len(PDF)
    )
    code, out, _ = run(capsys, "delete", sid(0), sid(1), "--data-dir", str(store))
    assert code == 0 and out.count("deleted") == 2
    code, _, err = run(capsys, "delete", sid(0), "--data-dir", str(store))
    assert code == 4 and "not in the archive" in err
    with SQLiteBackend(store) as backend:
        row = next(backend.scan(DOCUMENTS_DATA))
        backend.put(DOCUMENTS_DATA, [{"data_id": row["data_id"], "data": b"rotten" + row["data"]}])
    code, out, _ = run(capsys, "verify", "--data-dir", str(store))
    assert code == 5 and "PROBLEM" in out and row["data_id"] in out


def test_errors_are_messages_not_tracebacks(
    capsys: pytest.CaptureFixture[str], store: Path, tmp_path: Path
) -> None:
    SQLiteBackend(store).close()  # an empty archive
    code, _, err = run(capsys, "get", sid(0), "--data-dir", str(store))
    assert code == 4 and "not in the archive" in err
    code, _, err = run(capsys, "get", "nonsense", "--data-dir", str(store))
    assert code == 3 and "not a snapshot id" in err
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, _, err = run(capsys, "list", "--data-dir", str(blocker))
    assert code == 4 and err.startswith("imixs-archive: no archive in")
    code, _, err = run(capsys, "import", "-", "--data-dir", str(blocker))
    assert code == 2 and err.startswith("imixs-archive:")  # a folder to correct, as for backup
    code, _, err = run(capsys, "import", str(tmp_path / "missing"), "--data-dir", str(store))
    assert code == 4 and "no such file or folder" in err


def test_real_process_import_from_stdin(store: Path) -> None:
    xml = to_xml(make_snapshot(0, files={"a.pdf": PDF}))
    done = subprocess.run(
        [sys.executable, "-m", "imixs_archive", "import", "-", "--data-dir", str(store)],
        input=xml,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"1 new" in done.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "imixs_archive", "import", "-", "--data-dir", str(store)],
        input=b"<data><document>",
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 3 and b"Traceback" not in bad.stderr and b"failed" in bad.stderr


def test_a_large_import_runs_in_the_workers_started_before_the_archive_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Thresholds lowered to make four small files "large"."""
    import imixs_archive.cli as cli
    from imixs_archive.cli import archive_commands
    from imixs_archive.services import workers

    made: list[int] = []
    given: list[int] = []
    real_init, real_give = workers.Standby.__init__, workers.Standby.give

    def init(self: workers.Standby, count: int, warm: tuple[str, ...] = ()) -> None:
        made.append(id(self))
        real_init(self, count, warm)

    def give(self: workers.Standby, settings: object, task: object) -> None:
        given.append(id(self))
        real_give(self, settings, task)  # type: ignore[arg-type]

    monkeypatch.setattr(workers.Standby, "__init__", init)
    monkeypatch.setattr(workers.Standby, "give", give)
    monkeypatch.setattr(workers, "default_jobs", lambda: 2)
    monkeypatch.setattr(cli, "STANDBY_FROM_BYTES", 1)
    monkeypatch.setattr(archive_commands, "SPREAD_FROM_BYTES", 1)
    folder = tmp_path / "in"
    folder.mkdir()
    for step in range(4):
        (folder / f"{step}.xml").write_bytes(to_xml([make_snapshot(step)]))
    assert main(["import", "--data-dir", str(tmp_path / "store"), str(folder)]) == 0
    assert "4 new" in capsys.readouterr().out
    assert len(made) == 1 and given == made  # the worker started ahead got the work


def test_a_listing_leaves_out_a_snapshot_deleted_while_it_is_read(
    capsys: pytest.CaptureFixture[str], store: Path, inputs: Path
) -> None:
    """``list`` gathers a page of ids, then reads each one's summary: a snapshot another
    process deleted in between is left out, as a listing a moment later leaves it out,
    instead of the whole listing failing with exit 4 (the torture met it: ``list`` beside
    ``retention``). Here the delete lands between the two steps on purpose."""
    import datetime as dt

    from imixs_archive.cli.archive_commands import summary_rows
    from imixs_archive.config import load_settings
    from imixs_archive.runtime import open_archive

    assert run(capsys, "import", str(inputs), "--data-dir", str(store))[0] == 0
    with open_archive(load_settings({"ARCHIVE_DATA_DIR": str(store)})) as archive:
        listed = [sid(0), sid(1), sid(2)]
        archive.delete(sid(1))  # by another process, after the ids were gathered
        rows = summary_rows(archive, listed, dt.UTC)
    assert [row["snapshot"] for row in rows] == [sid(0), sid(2)]


def test_list_of_an_unknown_instance_is_not_found(
    capsys: pytest.CaptureFixture[str], store: Path, inputs: Path
) -> None:
    """A mistyped (well-formed) id says nothing is there and exits 4, not an empty table
    and 0; a snapshot id given instead names its instance; a page past the last of a
    known instance is empty, exit 0."""
    assert run(capsys, "import", str(inputs), "--data-dir", str(store))[0] == 0
    typo = ORIGIN[:-1] + ("0" if ORIGIN[-1] != "0" else "1")
    for wrong in (typo, sid(1)):
        code, out, err = run(capsys, "list", "--uniqueid", wrong, "--data-dir", str(store))
        assert code == 4 and out == "" and len(err.strip().splitlines()) == 1
        assert f"{wrong}: the archive holds no snapshot of this process instance" in err
    assert f"its process instance is {ORIGIN}" in err
    code, out, _ = run(
        capsys, "list", "--uniqueid", ORIGIN, "--after", sid(0), "--json", "--data-dir", str(store)
    )
    assert code == 0 and out == ""


def test_stats_counts_by_month_unless_asked_for_days_or_years(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two years of work printed 730 lines, one per day, with no way to ask for months."""
    store = tmp_path / "store"
    first = dt.datetime(2023, 1, 1, 12, tzinfo=dt.UTC)
    days = [first + dt.timedelta(days=9 * k) for k in range(80)]  # 2023-01-01 .. 2024-12-14
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        for k, when in enumerate(days):
            archive.store(make_snapshot(k, origin=numbered_origin(k), modified=when))
    capsys.readouterr()

    def lines_after_header(*by: str) -> list[str]:
        assert main(["stats", *by, "--data-dir", str(store)]) == 0
        out = capsys.readouterr().out.splitlines()
        at = next(i for i, line in enumerate(out) if line.startswith("snapshots per"))
        return out[at:]

    months = lines_after_header()
    assert months[0] == "snapshots per month (UTC):" and len(months) == 1 + 24
    assert months[1].split() == ["2023-01:", "4"]
    assert len(lines_after_header("--by", "day")) == 1 + 80
    assert lines_after_header("--by", "year")[1:] == [f"{'2023':>14}: 41", f"{'2024':>14}: 39"]
    code, out, _ = run(capsys, "stats", "--json", "--by", "month", "--data-dir", str(store))
    data = json.loads(out)
    assert code == 0
    assert sum(data["by_month"].values()) == sum(data["by_day"].values()) == 80
    assert len(data["by_month"]) == 24
