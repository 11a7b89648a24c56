"""The Restore page's "Back to a point in time" in real headless Chromium: the plan is
shown (instances going back with their item changes, the ones that did not exist yet)
before anything is sent; the restore needs the box ticked; then it runs and the workflow
double holds the snapshots of the point."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.restore_data import NEW_UID, archived_instances, bad_update
from support.workflow_double import WorkflowDouble
from web.live import LiveServer, serve_beside
from web.test_browser import browser, log_in, page, shot

__all__ = ["browser", "page"]  # the fixtures, over this module's ui_live

pytestmark = pytest.mark.browser
DAY = dt.datetime(2026, 6, 10, 9, 0, tzinfo=dt.UTC)
BAD = DAY + dt.timedelta(days=5)


@pytest.fixture(scope="module")
def ui_live(
    double: WorkflowDouble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    tmp = Path(tmp_path_factory.mktemp("ui-asof"))
    yield from serve_beside(double.url, tmp, ARCHIVE_TIMEZONE="Europe/Berlin")


def test_the_plan_is_shown_and_confirmed_before_anything_is_sent(
    page: Any, ui_live: LiveServer, double: WorkflowDouble
) -> None:
    newest = archived_instances(double, ui_live.archive, day=DAY)
    before = bad_update(double, ui_live.archive, [sorted(newest)[0], sorted(newest)[2]], at=BAD)
    posts = double.stats.posts
    log_in(page)
    page.click("nav >> text=Restore")
    page.fill("input[name=as_of]", "2026-06-15T10:55:00")  # Berlin: 08:55 UTC
    page.click("#as-of button[name=dry_run]")
    page.wait_for_selector("text=planning started")
    page.wait_for_selector("table.as-of-plan", timeout=30_000)
    rows = page.locator("table.as-of-plan tr:has(td)")
    assert rows.locator("td:nth-child(1)").all_inner_texts() == sorted(before)
    changes = rows.nth(0).locator("td:nth-child(3)").inner_text()
    assert "subject: 'overwritten' → 'Ticket A0'" in changes
    assert "$taskid: 9000 → 1002" in changes
    assert page.locator("table.not-yet td:nth-child(1)").all_inner_texts() == [NEW_UID]
    counts = page.locator(".plan-counts").inner_text()
    assert counts.startswith("2 instances go back, 1 did not exist yet (not deleted)")
    assert "back to 2026-06-15T10:55:00+02:00" in page.locator("h3 >> nth=0").inner_text()
    shot(page, "restore-as-of-plan")
    assert double.stats.posts == posts

    page.click("button[name=start_as_of]")  # not confirmed
    page.wait_for_selector("text=tick the box to confirm the restore as planned")
    assert double.stats.posts == posts

    page.check(".confirm-plan input[name=confirmed]")
    page.click("button[name=start_as_of]")
    page.wait_for_selector("text=restore started")
    page.wait_for_selector(".job [data-field=state].finished", timeout=30_000)
    message = page.locator(".job [data-field=message]").inner_text()
    assert "2 restored, 0 already current, 0 failed, 1 did not exist yet" in message
    assert double.stats.posts == posts + 2
    for uid, snapshot_id in before.items():
        assert double.workitems[uid]["$snapshotid"] == [snapshot_id]
    assert page.locator(".confirm-plan").count() == 0  # a restore done is not offered again
    saved = page.locator(".saved-plan").inner_text()
    assert "as-of 2026-06-15T08:55:00+00:00" in saved and "2 of 2" in saved, saved
    shot(page, "restore-as-of-done")
