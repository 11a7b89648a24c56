"""The retention preview of one process instance: over the API, on the Inspect page and
from the command line, what ``ARCHIVE_RETENTION`` decides for it (read from its partition
and newest snapshot, no pass over the archive)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.holds import place_hold, release_hold
from imixs_archive.cli import main
from imixs_archive.document.conventions import snapshot_time
from imixs_archive.document.xml_writer import to_xml
from support.snapshots import make_snapshot
from web.live import LiveServer, credentials_env, serve_store

INVOICE = "0e1d0000-0000-4000-8000-000000000071"
POLICY = "group:Invoice=10y"


@pytest.fixture(scope="module")
def with_policy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    env = {**credentials_env(), "ARCHIVE_RETENTION": POLICY}
    yield from serve_store(tmp_path_factory.mktemp("retention-one"), env)


def test_the_api_and_the_inspect_page_say_when_an_instance_goes(with_policy: LiveServer) -> None:
    doc = make_snapshot(71, origin=INVOICE)
    with_policy.archive.store(doc)
    newest = snapshot_time(str(doc.get_first("$uniqueid")))
    with with_policy.client("reader") as client:
        answer = client.get(f"/api/archive/instances/{INVOICE}/retention")
        assert answer.status_code == 200
        assert answer.json() == {
            "uniqueid": INVOICE,
            "rule": POLICY,
            "last_snapshot": newest.isoformat(timespec="seconds"),
            "ends": newest.replace(year=newest.year + 10).isoformat(timespec="seconds"),
            "held": False,
            "untimed": False,
        }
        page = client.get("/ui/inspect", params={"q": INVOICE})
        assert "Retention (ARCHIVE_RETENTION): its snapshots go on" in page.text
        assert POLICY in page.text
        unknown = client.get(
            "/api/archive/instances/00000000-0000-4000-8000-0000000dead0/retention"
        )
        assert unknown.status_code == 404
    place_hold(with_policy.archive.backend, INVOICE, "case 9", "mia", dt.datetime.now(dt.UTC))
    try:
        with with_policy.client("reader") as client:
            assert client.get(f"/api/archive/instances/{INVOICE}/retention").json()["held"]
            page = client.get("/ui/inspect", params={"q": INVOICE})
            assert "under legal hold: kept while it is" in page.text
    finally:
        release_hold(with_policy.archive.backend, INVOICE)


def test_the_command_line_says_it_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "store")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "one.xml").write_bytes(to_xml(make_snapshot(72, origin=INVOICE)))
    assert main(["import", str(folder), "--data-dir", store]) == 0
    capsys.readouterr()
    args = ["retention", "--uniqueid", INVOICE, "--policy", POLICY, "--data-dir", store]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{INVOICE}: its snapshots go on ") and POLICY in out
    assert main([*args[:-2], "--data-dir", store, "--json"]) == 0
    assert '"rule": "group:Invoice=10y"' in capsys.readouterr().out
    assert main(["retention", "--uniqueid", "nobody", "--data-dir", store]) == 4
