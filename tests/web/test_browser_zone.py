"""In Chromium: the job boxes the pages update while a job runs show its start in
ARCHIVE_TIMEZONE, named, as the server draws it (app.js localTime), across the autumn
clock change in Berlin and in New York."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from web.live import LiveServer, credentials_env, serve_store
from web.test_browser import browser, log_in  # noqa: F401  (the browser fixture)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def berlin_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    env = {**credentials_env(), "ARCHIVE_TIMEZONE": "Europe/Berlin"}
    yield from serve_store(Path(tmp_path_factory.mktemp("berlin-ui")), env)


def test_job_start_times_are_drawn_in_the_zone(browser: Any, berlin_ui: LiveServer) -> None:  # noqa: F811
    context = browser.new_context(base_url=berlin_ui.url)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        log_in(page)
        draw = "([iso, zone]) => localTime(iso, zone)"
        # 02:30 twice in Berlin on 27 October 2024: summer time, then winter time
        assert page.evaluate(draw, ["2024-10-27T00:30:00+00:00", "Europe/Berlin"]) == (
            "2024-10-27 02:30:00 Europe/Berlin"
        )
        assert page.evaluate(draw, ["2024-10-27T01:30:00+00:00", "Europe/Berlin"]) == (
            "2024-10-27 02:30:00 Europe/Berlin"
        )
        assert page.evaluate(draw, ["2024-03-10T07:00:00+00:00", "America/New_York"]) == (
            "2024-03-10 03:00:00 America/New_York"
        )
        assert page.evaluate(draw, [None, "UTC"]) == "–"
        page.goto("/ui/backup")
        page.click("button[name=start]")
        page.wait_for_selector("text=backup started")
        page.wait_for_selector(".job [data-field=state].finished", timeout=30_000)
        started = page.locator(".job [data-field=started]").first.inner_text()
        assert started.endswith(" Europe/Berlin") and started[:2] == "20"
    finally:
        context.close()
    assert not errors, errors
