"""Pages a person reads: listings of a day in time order with a total, the History
page's values, times and labels, forms shown (disabled) without a workflow, legal holds
and the retention preview in the UI, the snapshot page's other snapshots."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.services.listing_counts import count_modified
from imixs_archive.services.retention import Policy, run_retention
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.sync.resync import request_cancel
from support.snapshots import make_snapshot
from web.live import LiveServer, credentials_env, serve_store

DAY = dt.date(2023, 6, 14)
# ids sort against time: the instance whose id sorts first was modified last
LATE = "00000000-0000-4000-8000-000000000032"
EARLY = "ffffffff-0000-4000-8000-000000000032"
MIDDLE = "88888888-0000-4000-8000-000000000032"


def utc(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime.combine(DAY, dt.time(hour, minute), dt.UTC)


def put(archive: Archive, origin: str, when: dt.datetime, **items: object) -> str:
    doc = make_snapshot(0, origin=origin, modified=when, **items)
    doc["$uniqueid"] = f"{origin}-{int(when.timestamp() * 1000)}"
    return archive.store(doc).snapshot_id


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """No workflow configured; three instances on one day, ids against time order."""
    env = {**credentials_env(), "ARCHIVE_RETENTION": "*=1y"}  # applied only when asked
    for server in serve_store(tmp_path_factory.mktemp("pages"), env):
        put(server.archive, EARLY, utc(8))
        put(server.archive, MIDDLE, utc(9))
        put(server.archive, LATE, utc(10))
        yield server


def test_a_days_listing_is_in_time_order_with_a_total(live: LiveServer) -> None:
    params = {"from": DAY.isoformat(), "to": DAY.isoformat(), "tz": "UTC"}
    with live.client("reader") as client:
        whole = client.get("/api/archive/snapshots", params=params).json()
        assert [s["uniqueid"] for s in whole["snapshots"]] == [EARLY, MIDDLE, LATE]
        assert whole["total"] == 3
        # paged: the cursor goes on in time order, every page says the total
        seen, cursor = [], None
        while True:
            body = client.get(
                "/api/archive/snapshots",
                params={**params, "limit": 1, **({"cursor": cursor} if cursor else {})},
            ).json()
            assert body["total"] == 3
            seen += [s["uniqueid"] for s in body["snapshots"]]
            cursor = body["next"]
            if cursor is None:
                break
        assert seen == [EARLY, MIDDLE, LATE]
        page = client.get("/ui/inspect", params={"from": DAY.isoformat(), "to": DAY.isoformat()})
    assert page.status_code == 200
    text = page.text
    assert text.index(EARLY) < text.index(MIDDLE) < text.index(LATE)
    assert "3 snapshots in all" in text


def test_the_total_uses_stored_day_figures_and_the_ids(tmp_path: Path) -> None:
    from imixs_archive.analytics.aggregates import compute_cells
    from imixs_archive.analytics.day_store import store_day

    with SQLiteBackend(tmp_path / "store") as backend:
        archive = Archive(backend)
        for minute in (0, 30, 59):
            put(archive, f"{minute:08d}-0000-4000-8000-000000000032", utc(23, minute))
        put(archive, EARLY, utc(1))
        start, end = utc(23, 30), utc(23, 30) + dt.timedelta(hours=5)
        assert count_modified(archive, start, end) == 2  # from the ids' times
        assert count_modified(archive, utc(0), utc(0) + dt.timedelta(days=1)) == 4
        # stored figures of the day, current by its stamp, are used instead (marked x10)
        figures = compute_cells(archive, DAY)
        figures.stamp = archive.days.stamps(DAY, DAY)[DAY]
        figures.cells = [[*c[:3], c[3] * 10, *c[4:]] for c in figures.cells]
        store_day(archive, figures)
        assert count_modified(archive, start, end) == 20
        put(archive, MIDDLE, utc(23, 45))  # a new stamp: the figures are stale
        assert count_modified(archive, start, end) == 3


SAMPLE = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
LONG = "word " * 60


def test_history_shows_whole_values_times_in_the_named_zone_and_readable_snapshots(
    live: LiveServer,
) -> None:
    put(live.archive, MIDDLE, utc(11), txtcomment=LONG.strip())  # a second step of MIDDLE
    with live.client("reader") as client:
        sample = client.get(f"/ui/history/{SAMPLE}").text
        middle = client.get(f"/ui/history/{MIDDLE}").text
    assert "time in UTC" in sample
    # the nested times of txtworkflowhistory (stored +01:00) in UTC, the nil value said so
    assert "2024-03-05T08:15:00+00:00" in sample and "+01:00" not in sample
    assert "null" not in sample and "(empty)" in sample
    # a snapshot by its time and task and status; the id is the link and its tooltip
    first = f"{SAMPLE}-1709626500125"
    assert f'href="/ui/snapshot/{first}" title="{first}">2024-03-05 08:15:00</a>' in sample
    assert "1000 · Open" in sample
    assert f">{first.rsplit('-', 1)[1]}<" not in sample
    # a long value whole, not cut after 80 characters
    assert LONG.strip() in middle


@pytest.mark.parametrize(
    ("path", "actions"),
    [
        ("/ui/restore", ["/ui/actions/restore", "/ui/actions/restore-source"]),
        ("/ui/resync", ["/ui/actions/resync"]),
    ],
)
def test_without_a_workflow_the_forms_are_shown_disabled_with_what_to_set(
    live: LiveServer, path: str, actions: list[str]
) -> None:
    with live.client("manager") as client:
        text = client.get(path).text
    for action in actions:
        form = re.search(
            rf'<form method="post" action="{action}" class="action">(.*?)</form>', text, re.S
        )
        assert form is not None, action
        assert re.match(r'<fieldset class="plain" disabled', form.group(1)), action
    for setting in (
        "WORKFLOW_SERVICE_ENDPOINT",
        "WORKFLOW_SERVICE_USER",
        "WORKFLOW_SERVICE_PASSWORD",
    ):
        assert setting in text


def test_legal_holds_page_places_shows_and_releases_holds(live: LiveServer) -> None:
    first = f"{SAMPLE}-1709626500125"
    with live.client("reader") as reader:
        page = reader.get("/ui/holds")
        assert page.status_code == 200 and "No process instance is under legal hold" in page.text
        assert 'action="/ui/actions/hold"' not in page.text  # no forms for readers
        refused = reader.post("/ui/actions/hold", data={"uniqueid": SAMPLE, "reason": "x"})
        assert refused.status_code == 403
    with live.client("manager", follow_redirects=True) as client:
        unknown = client.post("/ui/actions/hold", data={"uniqueid": "nope", "reason": "case 1"})
        assert "holds no snapshot" in unknown.text and live.archive.holds.get("nope") is None
        no_reason = client.post("/ui/actions/hold", data={"uniqueid": SAMPLE, "reason": " "})
        assert "a reason" in no_reason.text and live.archive.holds.get(SAMPLE) is None
        placed = client.post("/ui/actions/hold", data={"uniqueid": SAMPLE, "reason": "case 4711"})
        assert f"{SAMPLE}: held (case 4711)" in placed.text
        assert f'id="hold-{SAMPLE}"' in placed.text and "mia" in placed.text
        ahead = client.post(
            "/ui/actions/hold", data={"uniqueid": "future-1", "reason": "case 9", "ahead": "yes"}
        )
        assert "held ahead of its data" in ahead.text
        # the held instance shows it on its pages; its snapshots' delete is disabled
        inspect = client.get("/ui/inspect", params={"q": SAMPLE}).text
        snapshot = client.get(f"/ui/snapshot/{first}").text
        for text in (inspect, snapshot):
            assert 'class="badge held"' in text and "case 4711" in text
        assert re.search(r'name="delete" disabled', snapshot)
        assert 'class="badge held"' not in client.get(f"/ui/inspect?q={MIDDLE}").text
        # the retention preview: what would go, the held instance kept and named
        preview = client.get("/ui/holds", params={"preview": 1}).text
        # the same service function as retention --dry-run
        expected = run_retention(live.archive, Policy.parse("*=1y"), dry_run=True)
        assert expected.expired and SAMPLE in expected.held
        assert f"{len(expected.expired)} (" in preview and "more are expired but held" in preview
        assert f'<a href="#hold-{SAMPLE}">{SAMPLE}</a>' in preview
        assert all(e.uniqueid in preview for e in expected.expired)
        assert live.archive.list_instance(expected.expired[0].uniqueid)  # nothing deleted
        unconfirmed = client.post(f"/ui/actions/release/{SAMPLE}", data={})
        assert "confirm" in unconfirmed.text and live.archive.holds.get(SAMPLE) is not None
        for uniqueid in (SAMPLE, "future-1"):
            released = client.post(f"/ui/actions/release/{uniqueid}", data={"confirm": "yes"})
            assert f"{uniqueid}: released" in released.text
        assert not live.archive.holds.list()
        assert 'class="badge held"' not in client.get(f"/ui/snapshot/{first}").text


def test_other_snapshots_by_time_and_label(live: LiveServer) -> None:
    first, second = f"{SAMPLE}-1709626500125", f"{SAMPLE}-1709723700132"
    with live.client("reader") as client:
        text = client.get(f"/ui/snapshot/{second}").text
    others = text[text.index('<ul class="others">') :]
    others = others[: others.index("</ul>")]
    assert f'<a href="/ui/snapshot/{first}" title="{first}">2024-03-05 08:15:00</a>' in others
    assert "<small>1000 · Open</small>" in others
    assert f'<strong title="{second}">2024-03-06 11:15:00</strong>' in others
    assert f">{first}<" not in others


def test_lead_time_chart_has_round_ticks_whole_names_and_no_long_floats() -> None:
    from imixs_archive.analytics.leadtimes import LeadTimes
    from imixs_archive.humanize import human_duration
    from imixs_archive.web import charts

    samples = [60773.79, 601230.892, 264213.741, 294873.4275, 456128.3947, 1046676.41]
    figures = LeadTimes("Leave request", samples).to_json()
    assert all(v == round(v, 3) for k, v in figures.items() if k not in ("group", "count"))
    svg = str(
        charts.grouped_bar_chart(
            "lead times",
            ["Purchase order (11)", "Ticket (11)", "Leave request (10)", "Invoice (6)"],
            [("p50", [86_400 * 12.1, 86_400 * 2.2, 86_400 * 3.1, 86_400 * 4.0])],
            human_duration,
        )
    )
    ticks = re.findall(r'text-anchor="end">([^<]*)</text>', svg)
    assert ticks[:5] == ["0", "4d", "8d", "12d", "16d"]  # on both drawings
    assert "\u2026" not in svg and "Purchase</tspan>" in svg  # wrapped, not shortened


def test_the_resync_page_names_its_state_in_words(live: LiveServer) -> None:
    """No raw keys or values ("Cancel False"): the resync's state under labels, a stop
    asked for said in words."""
    archive: Archive = live.archive
    state = archive.state.load()
    state["resync.status"] = "finished"
    state["resync.started"] = dt.datetime(2024, 3, 5, 8, 15, 0, 123456, tzinfo=dt.UTC)
    archive.state.save(state)
    with live.client("manager") as client:
        text = client.get("/ui/resync").text
    assert "Cancel" not in text and "False" not in text
    assert "<th>Last resync</th><td>finished</td>" in text
    assert "123456" not in text and ".123" not in text  # no microseconds
    state["resync.status"] = "running"
    archive.state.save(state)
    assert request_cancel(archive)
    with live.client("manager") as client:
        assert "the resync stops after the step in hand" in client.get("/ui/resync").text
