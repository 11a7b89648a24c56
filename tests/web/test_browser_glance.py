"""In Chromium, at desktop and phone width: the Monitor's "complete and current?" card is
the first thing on the page and fits the screen, its ledger card too (the public key
breaks); the Statistics page draws every day of its time axis (issue 32)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from web.live import LiveServer, credentials_env
from web.test_browser import UNREADABLE, browser, log_in, shot  # noqa: F401  (the fixture)
from web.test_monitor_glance import DAYS_AGO, _serve

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def glance_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from _serve(tmp_path_factory.mktemp("glance") / "store", credentials_env(), seed=True)


@pytest.mark.parametrize(
    ("width", "height", "prefix"), [(1280, 900, "desktop"), (390, 844, "phone")]
)
def test_the_monitor_answers_first_and_the_time_axis_has_every_day(
    browser: Any,  # noqa: F811
    glance_ui: LiveServer,
    width: int,
    height: int,
    prefix: str,
) -> None:
    context = browser.new_context(
        base_url=glance_ui.url, viewport={"width": width, "height": height}
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        log_in(page)
        first = page.locator("main section.card").first
        assert first.get_attribute("id") == "glance"
        assert page.locator("#glance td[data-glance]").count() == 8
        box = first.bounding_box()
        assert box is not None and box["y"] < height  # it starts on the first screen
        if width > 1000:
            assert box["y"] + box["height"] <= height, box  # and, on a desktop, ends there
        assert page.evaluate("document.documentElement.scrollWidth") <= width + 2
        for card in ("#glance", "#sync", "#ledger"):  # no table wider than its card
            fits = page.locator(card).evaluate(
                "c => c.querySelector('table').getBoundingClientRect().right"
                " <= c.getBoundingClientRect().right"
            )
            assert fits, card
        assert page.evaluate(UNREADABLE) == []
        assert not page.locator("#store details").evaluate("d => d.open")  # internals folded
        shot(page, f"{prefix}-monitor-glance")
        page.goto("/ui/stats")
        days = max(DAYS_AGO) + 1
        drawn = "wide" if width > 1000 else "narrow"  # the style sheet shows one of the two
        bars = page.locator(f"#overview section:first-child svg.chart.{drawn} rect.bar")
        assert bars.count() == days
        assert page.evaluate("document.documentElement.scrollWidth") <= width + 2
        assert page.evaluate(UNREADABLE) == []
        shot(page, f"{prefix}-statistics-gap")
    finally:
        context.close()
    assert not errors, errors
