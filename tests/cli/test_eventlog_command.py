"""``imixs-archive analyze eventlog OUT``: the log written, and each bad input one line
with its exit code (docs/analytics.md, "Event logs")."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.document.model import Document
from imixs_archive.storage.sqlite import SQLiteBackend

CET = dt.timezone(dt.timedelta(hours=1))


def _snapshot(
    origin: str, when: dt.datetime, status: str, group: str = "Invoice", task: int | None = 1000
) -> Document:
    items: dict[str, object] = {
        "$uniqueid": f"{origin}-{int(when.timestamp() * 1000)}",
        "$modified": when,
        "$workflowgroup": group,
        "$editor": "anna",
    }
    if task is not None:
        items["$taskid"] = task
    if status:
        items["$workflowstatus"] = status
    return Document(items)


@pytest.fixture
def store(tmp_path: Path) -> str:
    folder = tmp_path / "store"
    origin = "0000000a-0000-4000-8000-000000000001"
    with SQLiteBackend(folder) as backend, Archive(backend) as archive:
        # 23:30 in CET is the next day in UTC: --tz decides which day it is on
        archive.store(_snapshot(origin, dt.datetime(2024, 3, 1, 23, 30, tzinfo=CET), "Received"))
        archive.store(_snapshot(origin, dt.datetime(2024, 3, 2, 9, 0, tzinfo=CET), ""))
        other = "0000000b-0000-4000-8000-000000000002"
        archive.store(_snapshot(other, dt.datetime(2024, 3, 3, tzinfo=CET), "", "Ticket", None))
    return str(folder)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["analyze", "eventlog", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_writes_each_format_and_warns_of_steps_without_a_task_name(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xes = tmp_path / "log.xes"
    code, out, err = run(capsys, str(xes), "--group", "Invoice", "--data-dir", store)
    assert code == 0 and out.startswith("1 traces, 2 events")
    text = xes.read_text(encoding="utf-8")
    assert text.count("<event>") == 2 and 'value="task 1000"' in text
    assert "Ticket" not in text and err == ""
    packed = tmp_path / "log.xes.gz"
    code, _out, err = run(capsys, str(packed), "--data-dir", store)
    assert code == 0
    assert err == (
        "warning: snapshots without a task name or $taskid (the step '(no task id)') (1 times)\n"
    )
    assert gzip.decompress(packed.read_bytes()).count(b"<trace>") == 2
    ocel = tmp_path / "log.jsonocel"
    assert run(capsys, str(ocel), "--data-dir", store)[0] == 0
    assert len(json.loads(ocel.read_text(encoding="utf-8"))["events"]) == 3


def test_a_range_selects_by_the_day_in_the_zone(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "day.xes"
    day = ["--from", "2024-03-01", "--to", "2024-03-01", "--data-dir", store]
    assert run(capsys, str(out), *day, "--tz", "Europe/Berlin")[0] == 0
    assert out.read_text(encoding="utf-8").count("<event>") == 1
    code, _out, err = run(capsys, str(out), *day, "--tz", "UTC")  # 22:30 UTC on 1 March
    assert code == 0 and out.read_text(encoding="utf-8").count("<event>") == 1
    assert err == ""


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--group", "Nope"], 4, "no workflow group 'Nope' in the archive"),
        (["--from", "2020-01-01", "--to", "2020-01-31"], 4, "no snapshots modified 2020-01-01"),
        (["--from", "2024-03-02", "--to", "2024-03-01"], 2, "is before --from"),
    ],
)
def test_bad_input_is_one_line_with_its_exit_code(
    store: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    says: str,
) -> None:
    out = tmp_path / "log.xes"
    found, _out, err = run(capsys, str(out), *args, "--data-dir", store)
    assert found == code
    assert says in err and err.count("\n") == 1
    assert not out.exists() and not list(tmp_path.glob("*.part"))


def test_an_output_that_cannot_be_written_is_2(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for target, says in (
        (tmp_path / "missing" / "log.xes", "cannot write"),
        (tmp_path / "log.txt", "name it .xes, .xes.gz or .jsonocel"),
    ):
        code, _out, err = run(capsys, str(target), "--data-dir", store)
        assert code == 2 and says in err and err.count("\n") == 1
