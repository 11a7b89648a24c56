"""The readable pages in headless Chromium at phone width (375 px) and on a desktop: nothing
wider than the screen, no label of a chart cut or shortened (the lead times of the demo
month: round ticks, group names whole), the checks of ``test_browser.UNREADABLE``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from web.live import LiveServer, credentials_env, serve_demo_month

browser_tests = pytest.importorskip("web.test_browser")  # skips without Chromium
UNREADABLE, SAMPLE, shot = browser_tests.UNREADABLE, browser_tests.SAMPLE, browser_tests.shot
log_in = browser_tests.log_in
browser = browser_tests.browser
pytestmark = pytest.mark.browser

# the texts of the charts shown (those of one ``data-chart`` card, or all)
CHART_TEXTS = """(name) => Array.from(
  document.querySelectorAll(name ? `[data-chart=${name}] svg.chart` : "svg.chart")
).filter((svg) => svg.getClientRects().length).flatMap((svg) =>
  Array.from(svg.querySelectorAll("text")).map((t) => t.textContent))"""


@pytest.fixture(scope="module")
def demo_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The samples and the demo month, a retention policy (applied only when asked), and
    one hold; no workflow configured."""
    tmp = Path(tmp_path_factory.mktemp("pages-browser"))
    env = {**credentials_env(), "ARCHIVE_RETENTION": "*=1y"}
    yield from serve_demo_month(tmp, env)


@pytest.mark.parametrize(("width", "prefix"), [(375, "phone"), (1280, "desktop")])
def test_pages_fit_and_cut_no_label(
    browser: Any, demo_live: LiveServer, width: int, prefix: str
) -> None:
    context = browser.new_context(base_url=demo_live.url, viewport={"width": width, "height": 800})
    page = context.new_page()
    log_in(page)
    page.goto("/ui/holds")
    page.fill("input[name=uniqueid]", SAMPLE)
    page.fill("input[name=reason]", "case 4711, court order of 2024-05-02")
    page.click("button[name=place]")
    page.wait_for_selector("text=held (case 4711")
    newest = demo_live.archive.list_instance(SAMPLE)[0]
    for path, name in [
        ("/ui/inspect?from=2024-03-01&to=2024-03-31", "inspect-days"),
        (f"/ui/inspect?q={SAMPLE}", "inspect-held"),
        (f"/ui/history/{SAMPLE}", "history"),
        (f"/ui/snapshot/{newest}", "snapshot-held"),
        ("/ui/holds?preview=1", "holds"),
        ("/ui/restore", "restore-unconfigured"),
        ("/ui/resync", "resync-unconfigured"),
        ("/ui/stats?from=2024-03-01&to=2024-05-31", "statistics-lead-times"),
    ]:
        page.goto(path)
        used = page.evaluate("document.documentElement.scrollWidth")
        assert used <= width + 1, (path, used)
        shot(page, f"pages-{prefix}-{name}")
        assert page.evaluate(UNREADABLE) == [], path
    texts = page.evaluate(CHART_TEXTS, "lead-times")
    assert texts, "no lead-time chart drawn"
    everything = page.evaluate(CHART_TEXTS, "")
    assert not [t for t in everything if "\u2026" in t], everything  # no name shortened
    ticks = texts[:5]
    assert ticks[0] == "0" and all(t[:-1].isdigit() for t in ticks[1:]), ticks  # 4d, 8d, ...
    page.goto(f"/ui/holds#hold-{SAMPLE}")
    page.check(f"#hold-{SAMPLE} input[name=confirm]")
    page.click(f"#hold-{SAMPLE} button[name=release]")
    page.wait_for_selector(f"text={SAMPLE}: released")
    context.close()
