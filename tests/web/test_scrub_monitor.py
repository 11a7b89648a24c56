"""The scrub ``serve`` schedules (``services/scrub_schedule.py``), over real HTTP: slices run
on their own, a cycle ends within the period, and its coverage and findings show on the
Monitor's Scrub card, in /metrics, and in real headless Chromium."""

from __future__ import annotations

import html
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.archive.verify_fill import corrupt_a_piece, fill

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.scrub import LEASE
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
from web.live import LiveServer, credentials_env, start_server

CHROMIUM = os.environ.get("ARCHIVE_TEST_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def scrubbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    store = tmp_path_factory.mktemp("scrub") / "store"
    backend = SQLiteBackend(store)
    env = {
        **credentials_env(),
        "ARCHIVE_DATA_DIR": str(store),
        "ARCHIVE_SCRUB_PERIOD": "6s",
        "ARCHIVE_SCRUB_INTERVAL": "300ms",
    }
    settings = load_settings(env)
    app = create_app(settings, backend)
    archive: Archive = app.state.services.archive
    fill(archive, instances=12)
    data_id = corrupt_a_piece(archive.backend)
    live = start_server(app, settings, archive)
    try:
        yield live, data_id
    finally:
        live.stop()
        backend.close()


def _metric(text: str, name: str) -> float | None:
    found = re.search(rf"^imixs_archive_{name} ([0-9.e+-]+)$", text, re.M)
    return float(found[1]) if found else None


def _after_a_cycle(live: LiveServer) -> str:
    deadline = time.monotonic() + 60
    with live.socket_client("reader") as client:
        while True:
            text = client.get("/metrics").text
            if _metric(text, "scrub_last_cycle_seconds") is not None:
                return text
            assert time.monotonic() < deadline, "no cycle ended within a minute"
            time.sleep(0.2)


@contextmanager
def _paused(live: LiveServer) -> Iterator[None]:
    """No slice runs meanwhile (this test holds the scrub's lease): the share checked
    within the period can then only fall as the window moves on, so what a page shows
    lies between what /api/scrub says just before and just after."""
    books, holder = CheckBooks(live.archive.backend), f"test@pause:{os.getpid()}:scrub"
    deadline = time.monotonic() + 60
    while books.take_lease(LEASE, holder, 120_000):
        assert time.monotonic() < deadline, "a slice held the lease for a minute"
        time.sleep(0.05)
    try:
        yield
    finally:
        books.release_lease(LEASE, holder)


def _between(live: LiveServer, path: str) -> tuple[float, str, float]:
    """The share checked within the period as /api/scrub says it before and after
    ``path`` is read, with no slice running, and what ``path`` answered."""
    with _paused(live), live.socket_client("reader") as client:
        before = float(client.get("/api/scrub").json()["covered_share"])
        text = client.get(path).text
        after = float(client.get("/api/scrub").json()["covered_share"])
    return before, text, after


def test_serve_scrubs_and_the_metrics_say_how_far(scrubbed: tuple[LiveServer, str]) -> None:
    live, data_id = scrubbed
    _after_a_cycle(live)
    before, text, after = _between(live, "/metrics")
    assert after <= (_metric(text, "scrub_covered_ratio") or 0) <= before
    # a moving window of the period (6 s), slices every 300 ms: most of it checked
    assert before >= 0.5
    assert (_metric(text, "scrub_findings") or 0) >= 1
    assert 0 <= (_metric(text, "scrub_cycle_ratio") or 0) <= 1
    assert _metric(text, "scrub_last_slice_seconds") is not None
    with live.socket_client("reader") as client:
        status = client.get("/api/scrub").json()
    assert status["started"] and status["period_seconds"] == 6.0
    assert status["last_cycle"]["problems"] >= 1 and status["finding_count"] >= 1
    assert any(data_id in finding["text"] for finding in status["findings"])
    assert status["this_process"]["last_slice"] is not None  # this process ran the slices


def _card(page: str) -> dict[str, str]:
    card = page.split('id="scrub"', 1)[1].split("</section>", 1)[0]
    return {
        key: html.unescape(value)
        for key, value in re.findall(r'<td data-scrub="(\w+)"[^>]*>(.*?)</td>', card, re.S)
    }


def test_the_monitor_shows_coverage_and_findings(scrubbed: tuple[LiveServer, str]) -> None:
    live, data_id = scrubbed
    _after_a_cycle(live)
    before, page, after = _between(live, "/ui/monitor")
    card = _card(page)
    share = re.fullmatch(r"([\d.]+)% of the archive in the last 6s", card["coverage"])
    assert share, card
    assert round(after * 100, 1) <= float(share[1]) <= round(before * 100, 1), (before, card)
    assert before >= 0.5
    assert card["schedule"] == "every 300ms; a cycle within 6s"
    assert card["last_cycle"].startswith("ended ")
    assert int(card["findings"]) >= 1
    findings = page.split("data-scrub-findings", 1)[1].split("</ul>", 1)[0]
    assert data_id in findings
    assert "data-scrub-failed" in page


def test_the_scrub_card_in_chromium(scrubbed: tuple[LiveServer, str]) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    browser_tests: Any = pytest.importorskip("web.test_browser")
    live, data_id = scrubbed
    _after_a_cycle(live)
    with browser_tests.logged_in_page(live.url, "rex") as page:
        card = page.locator("#scrub")
        assert card.locator("h2").inner_text() == "Scrub"
        coverage = card.locator('[data-scrub="coverage"]').inner_text()
        assert re.fullmatch(r"[\d.]+% of the archive in the last 6s", coverage)
        assert data_id in card.locator("[data-scrub-findings]").inner_text()
        assert card.locator('[data-scrub="findings"]').is_visible()
