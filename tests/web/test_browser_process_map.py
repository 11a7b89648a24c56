"""The Process map in headless Chromium, with and without JavaScript, at phone width and on
a desktop: reached from Statistics, a group chosen in the form, Graphviz's drawing shown
and fitting the screen, an arrow followed to its instances and on to a history."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from web.live import LiveServer, credentials_env, serve_demo_month

browser_tests = pytest.importorskip("web.test_browser")  # skips without Chromium
UNREADABLE, shot, log_in = browser_tests.UNREADABLE, browser_tests.shot, browser_tests.log_in
browser = browser_tests.browser
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        shutil.which("dot") is None,
        reason="Graphviz's dot is not installed (apt-get install graphviz)",
    ),
]


@pytest.fixture(scope="module")
def demo_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from serve_demo_month(
        Path(tmp_path_factory.mktemp("process-map-browser")), credentials_env()
    )


@pytest.mark.parametrize(
    ("width", "script"),
    [(375, True), (1280, True), (1280, False)],
    ids=["phone", "desktop", "no-js"],
)
def test_the_map_from_statistics_to_an_instance(
    browser: Any, demo_live: LiveServer, width: int, script: bool
) -> None:
    context = browser.new_context(
        base_url=demo_live.url,
        viewport={"width": width, "height": 800},
        java_script_enabled=script,
    )
    page = context.new_page()
    log_in(page)
    page.goto("/ui/stats?from=2024-03-01&to=2024-05-31")
    page.click("#mining a:text('Process map')")
    page.wait_for_url("**/ui/process-map?**")
    page.select_option("select[name=group]", "Ticket")
    page.click("button[name=show]")
    page.wait_for_selector(".process-graph svg")
    assert "group=Ticket" in page.url
    used = page.evaluate("document.documentElement.scrollWidth")
    assert used <= width + 1, used
    assert page.evaluate(UNREADABLE) == []
    shot(page, f"process-map-{width}-{'js' if script else 'nojs'}")
    drawn = page.locator(".process-graph svg g.node text").all_text_contents()
    assert {"Open", "In Progress", "Completed", "start", "end"} <= set(drawn)
    page.locator(".process-graph svg g.edge a").first.click()
    page.wait_for_url("**/ui/process-map/edge?**")
    assert "Open → In Progress" in page.locator("h1").inner_text()
    page.locator("ul.card a").first.click()
    page.wait_for_url("**/ui/history/**")
    assert page.locator("table.history tr[data-step]").count() >= 2
    context.close()
