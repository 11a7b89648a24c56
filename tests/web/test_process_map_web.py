"""The Process map page, its arrows' instance lists, and the API's event log download and
process map, on the demo month (``scripts/demo_month.py``); the page without Graphviz."""

from __future__ import annotations

import datetime as dt
import gzip
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from imixs_archive.config import load_settings
from imixs_archive.document.conventions import origin_id
from imixs_archive.document.model import Document
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
from support.demo_docs import demo_documents
from web.live import LiveServer, credentials_env, serve_documents
from web.test_api_access import assert_problem

RANGE = {"from": "2024-04-01", "to": "2024-05-31"}
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (apt-get install graphviz)"
)
HOSTILE = '<script>alert("x")</script> \\N "q"'


def hostile_documents() -> list[Document]:
    """Two steps of one instance whose names a page must escape."""
    origin = "0000abcd-0000-4000-8000-000000000001"
    docs = []
    for hour, status in ((9, HOSTILE), (11, "Done & dusted")):
        when = dt.datetime(2024, 4, 2, hour, tzinfo=dt.UTC)
        docs.append(
            Document(
                {
                    "$uniqueid": f"{origin}-{int(when.timestamp() * 1000)}",
                    "$modified": when,
                    "$workflowgroup": "Hostile",
                    "$workflowstatus": status,
                    "$taskid": 1,
                }
            )
        )
    return docs


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return demo_documents() + hostile_documents()


@pytest.fixture(scope="module")
def live(docs: list[Document], tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from serve_documents(Path(tmp_path_factory.mktemp("process-map")), docs)


def ticket_traces(docs: list[Document]) -> dict[str, list[str]]:
    traces: dict[str, list[tuple[dt.datetime, str]]] = {}
    for doc in docs:
        if doc.get_first("$workflowgroup") == "Ticket":
            origin = origin_id(str(doc.get_first("$uniqueid")))
            traces.setdefault(origin, []).append(
                (doc.get_first("$modified"), str(doc.get_first("$workflowstatus")))
            )
    return {o: [s for _t, s in sorted(steps)] for o, steps in traces.items()}


@needs_dot
def test_the_map_is_drawn_by_graphviz_and_its_arrows_list_their_instances(
    live: LiveServer, docs: list[Document]
) -> None:
    traces = ticket_traces(docs)
    took = {o for o, path in traces.items() if "In Progress" in path}
    with live.client("reader") as client:
        page = client.get("/ui/process-map", params={"group": "Ticket", **RANGE})
        assert page.status_code == 200, page.text
        html = page.text
        assert "<svg" in html and 'class="graph"' in html  # Graphviz's SVG, inline
        assert "data-layout-missing" not in html
        links = re.findall(r'xlink:href="(/ui/process-map/edge\?[^"]+)"', html)
        assert len(set(links)) == 2  # Open -> In Progress -> Completed (arrow, label)
        target = next(link for link in links if "source=Open" in link)
        edge = client.get(unquote(target.replace("&amp;", "&")))
        assert edge.status_code == 200
        listed = set(re.findall(r'href="/ui/history/([^"]+)"', edge.text))
        assert listed == took and len(took) >= 5
        assert f"{len(took)} times" in edge.text
        # every instance of the group starts with Open
        assert f"{len(traces)} process instances" in html


@needs_dot
def test_names_are_escaped_in_the_drawing_and_the_tables(live: LiveServer) -> None:
    with live.client("reader") as client:
        html = client.get("/ui/process-map", params={"group": "Hostile", **RANGE}).text
    assert "<svg" in html and "<script>alert" not in html
    assert "&lt;script&gt;alert" in html
    assert "Done &amp; dusted" in html


def test_the_page_without_graphviz_says_what_to_install_and_shows_the_rest(
    docs: list[Document], tmp_path: Path
) -> None:
    for server in serve_documents(
        tmp_path, docs[:20], ARCHIVE_GRAPHVIZ_DOT=str(tmp_path / "no-dot")
    ):
        with server.client("reader") as client:
            group = str(docs[0].get_first("$workflowgroup"))
            page = client.get("/ui/process-map", params={"group": group, **RANGE})
        assert page.status_code == 200
        assert "data-layout-missing" in page.text and "apt-get install graphviz" in page.text
        assert "<svg" not in page.text.split("data-graph", 1)[1].split("</section>")[0]
        assert 'data-table="edges"' in page.text and 'data-table="variants"' in page.text


def test_the_page_defaults_and_bad_ranges(live: LiveServer) -> None:
    with live.client("reader") as client:
        first = client.get("/ui/process-map")
        assert first.status_code == 200 and "data-map=" in first.text
        unknown = client.get("/ui/process-map", params={"group": "Nope"})
        assert unknown.status_code == 200 and "no workflow group &#39;Nope&#39;" in unknown.text
        backwards = client.get(
            "/ui/process-map", params={"group": "Ticket", "from": "2024-05-01", "to": "2024-04-01"}
        )
        assert "from is after to" in backwards.text
        empty = client.get(
            "/ui/process-map", params={"group": "Ticket", "from": "2023-01-01", "to": "2023-01-31"}
        )
        assert "data-empty-map" in empty.text
        stats = client.get("/ui/stats", params=RANGE).text
    assert 'href="/ui/process-map?from=2024-04-01&amp;to=2024-05-31"' in stats
    assert 'action="/api/analytics/eventlog"' in stats


def test_the_api_map_and_its_bad_input(live: LiveServer) -> None:
    with live.client("reader") as client:
        data = client.get("/api/analytics/process-map", params={"group": "Ticket", **RANGE})
        assert data.status_code == 200
        edges = {(e["source"], e["target"]) for e in data.json()["edges"]}
        assert edges == {("Open", "In Progress"), ("In Progress", "Completed")}
        assert_problem(
            client.get("/api/analytics/process-map", params={"group": "Nope", **RANGE}), 404
        )
        assert_problem(
            client.get(
                "/api/analytics/process-map",
                params={"group": "Ticket", "from": "2024-05-01", "to": "2024-04-01"},
            ),
            400,
        )
        started = time.monotonic()
        wide = client.get(
            "/api/analytics/process-map",
            params={"group": "Ticket", "from": "0001-01-01", "to": "9999-12-31"},
        )
        assert wide.status_code == 200 and wide.json()["instances"] == data.json()["instances"]
        # a range of 9999 years costs what is archived in it, not its days: 30 s (was 10 s)
        # for a busy machine's answer
        assert time.monotonic() - started < 30


def test_the_event_log_download(live: LiveServer, docs: list[Document]) -> None:
    tickets = [d for d in docs if d.get_first("$workflowgroup") == "Ticket"]
    with live.socket_client("reader") as client:
        answer = client.get(
            "/api/analytics/eventlog", params={"group": "Ticket", "format": "xes.gz", **RANGE}
        )
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/gzip"
        assert (
            'filename="imixs-archive-eventlog-from-2024-04-01-to-2024-05-31.xes.gz"'
            in (answer.headers["content-disposition"])
        )
        xes = gzip.decompress(answer.content).decode()
        assert xes.count("<event>") == len(tickets)
        ocel = client.get("/api/analytics/eventlog", params={"format": "jsonocel", "group": ""})
        assert ocel.status_code == 200 and len(ocel.json()["events"]) == len(docs)
        wide = client.get(
            "/api/analytics/eventlog",
            params={"format": "xes", "from": "0001-01-01", "to": "9999-12-31"},
        )
        assert wide.status_code == 200 and wide.text.count("<event>") == len(docs)
        for params, status in (
            ({"group": "Nope"}, 404),
            ({"from": "2020-01-01", "to": "2020-01-31"}, 404),
            ({"format": "csv"}, 400),
            ({"from": "2024-05-01", "to": "2024-04-01"}, 400),
        ):
            assert_problem(client.get("/api/analytics/eventlog", params=params), status)


def test_serve_counts_every_group_s_default_map_in_the_background(
    docs: list[Document], tmp_path: Path
) -> None:
    """``serve``'s background count (the figures schedule's warm) keeps every group's
    default map (the year up to the newest day), so that even a first view reads kept
    months instead of counting them in the request."""
    from imixs_archive.analytics.day_store import read_months
    from imixs_archive.web import ui_process_map

    settings = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "data"), **credentials_env()})
    with SQLiteBackend(tmp_path / "store") as backend:
        app = create_app(settings, backend)  # not started: its schedule runs no count
        svc = app.state.services
        for doc in docs[:60]:
            svc.archive.store(doc)
        groups = ui_process_map.chosen(svc, None, None, None)[0]
        assert len(groups) >= 2
        assert not any(read_months(svc.archive, "UTC", f"dfg:{g}") for g in groups)
        ui_process_map.warm(svc)
        assert all(read_months(svc.archive, "UTC", f"dfg:{g}") for g in groups)
