"""The web UI in real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

Log in, find a process instance, open a snapshot, download an attachment and check its
hash, start a restore against the workflow test double and watch it finish, see the
charts, run a backup, delete with confirmation, and use the UI at phone width. Every page
is saved as a screenshot in tests/artifacts/.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.workflow_double import WorkflowDouble
from web.live import (
    ARTIFACTS,
    BIG_ORIGIN,
    PASSWORDS,
    LiveServer,
    serve_beside,
)

CHROMIUM = os.environ.get("ARCHIVE_TEST_CHROMIUM", "/usr/bin/chromium")
if not Path(CHROMIUM).exists():
    pytest.skip(
        f"no Chromium at {CHROMIUM} (install Debian's chromium package; .ci/run does)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
)

pytestmark = pytest.mark.browser
# The flags this machine needs: no sandbox as root, and no background traffic to the
# (closed) network.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SAMPLE = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def ui_live(
    double: WorkflowDouble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    yield from serve_beside(
        double.url,
        Path(tmp_path_factory.mktemp("ui")),
        WORKFLOW_SYNC_INITIALDELAY="0",
        WORKFLOW_SYNC_INTERVAL="200",
    )


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as playwright:
        # A persistent context would take --user-data-dir; a plain launch gets a fresh
        # temporary profile from Playwright, which is what the flags above ask for.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield launched
        launched.close()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser: Any, ui_live: LiveServer) -> Iterator[Any]:
    context = browser.new_context(base_url=ui_live.url, viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield opened
    context.close()
    assert not errors, errors  # no script errors, no CSP violations


def log_in(page: Any, user: str = "mia") -> None:
    page.goto("/ui/monitor")
    assert "/login" in page.url
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORDS[user])
    page.click("button[type=submit]")
    page.wait_for_url("**/ui/monitor")


@contextmanager
def logged_in_page(url: str, user: str = "mia") -> Iterator[Any]:
    """A page of a Chromium of its own on ``url``, logged in as ``user``."""
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = launched.new_page(base_url=url)
            log_in(page, user)
            yield page
        finally:
            launched.close()


def test_log_in_and_monitor(page: Any) -> None:
    page.goto("/ui/monitor")
    shot(page, "login")
    log_in(page)
    assert page.locator("h1").inner_text() == "Monitor"
    assert page.locator(".who").inner_text().startswith("mia")
    page.wait_for_selector("text=Workflow endpoint")
    shot(page, "monitor")


def test_find_an_instance_open_a_snapshot_and_download(page: Any, ui_live: LiveServer) -> None:
    log_in(page)
    page.click("nav >> text=Inspect")
    page.fill("input[name=q]", SAMPLE)
    page.click("form.search >> nth=0 >> button")
    rows = page.locator("table.snapshots tr td:first-child a")
    assert rows.count() == 3
    shot(page, "inspect")
    newest = rows.first.inner_text()
    assert newest == ui_live.archive.list_instance(SAMPLE)[0]
    rows.first.click()
    page.wait_for_selector("table.items")
    assert page.locator("td.name", has_text="$uniqueid").count() == 1
    shot(page, "snapshot-items")
    page.click("a.tab[href='#files']")
    link = page.locator("a.download").first
    name = link.inner_text()
    with page.expect_download() as info:
        link.click()
    data = Path(info.value.path()).read_bytes()
    _entry, content = ui_live.archive.file_of_snapshot(newest, name)
    assert hashlib.md5(data).hexdigest().upper() == content.key
    shot(page, "snapshot-files")
    page.click("a.tab[href='#xml']")
    assert newest in page.locator("pre.xml").inner_text()
    shot(page, "snapshot-xml")


def test_restore_against_the_workflow_and_watch_it_finish(
    page: Any, double: WorkflowDouble
) -> None:
    log_in(page)
    page.click("nav >> text=Restore")
    page.fill("input[name=from]", "2024-03-01")
    page.fill("input[name=to]", "2024-03-31")
    page.click("button[name=start]")
    page.wait_for_selector("text=restore started")
    page.wait_for_selector(".job [data-field=state].finished", timeout=30_000)
    assert "3 restored" in page.locator(".job [data-field=message]").inner_text()
    assert any(sid.startswith(SAMPLE) for sid in double.snapshots)
    shot(page, "restore")


def test_statistics_draw_charts(page: Any) -> None:
    log_in(page)
    page.click("nav >> text=Statistics")
    charts = page.locator("#overview svg.chart.wide")
    assert charts.count() == 4
    assert page.locator("#overview svg.chart.wide rect.bar").count() >= 3
    assert page.locator("#overview svg.chart.wide polyline.line").count() == 2
    box = charts.first.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 50
    shot(page, "statistics")


def test_backup_and_verify_from_the_ui(page: Any, ui_live: LiveServer) -> None:
    log_in(page)
    page.click("nav >> text=Backup")
    page.fill("input[name=folder]", "from-ui")
    page.click("button[name=start]")
    page.wait_for_selector("text=backup started")
    page.wait_for_selector(".job [data-field=state].finished", timeout=30_000)
    assert list((ui_live.settings.backup_dir / "from-ui").rglob("*.xml"))
    page.click("button[name=verify]")
    page.wait_for_selector("text=verify started")
    page.wait_for_selector(".job >> nth=1 >> [data-field=state].finished", timeout=30_000)
    shot(page, "backup")


def test_delete_needs_the_confirmation(page: Any, ui_live: LiveServer) -> None:
    from support.snapshots import make_snapshot

    doc = make_snapshot(40, origin="de1e7e00-0000-4000-8000-000000000040")
    ui_live.archive.store(doc)
    sid = doc.get_first("$uniqueid")
    log_in(page)
    page.goto(f"/ui/snapshot/{sid}")
    page.click("button[name=delete]")  # the box is not ticked: the browser refuses
    assert ui_live.archive.exists(sid)
    page.check("form[action^='/ui/actions/delete'] input[name=confirm]")
    page.click("button[name=delete]")
    page.wait_for_selector(f"text=deleted {sid}")
    assert not ui_live.archive.exists(sid)
    shot(page, "deleted")


def test_a_reader_sees_no_buttons_that_change_data(page: Any) -> None:
    log_in(page, "rex")
    page.goto(f"/ui/inspect?q={SAMPLE}")
    page.locator("table.snapshots a").first.click()
    page.wait_for_selector("table.items")
    assert page.locator("button[name=delete]").count() == 0
    page.goto("/ui/backup")
    assert page.locator("button[name=start]").count() == 0


def test_phone_width(browser: Any, ui_live: LiveServer) -> None:
    context = browser.new_context(
        base_url=ui_live.url, viewport={"width": 390, "height": 844}, is_mobile=True
    )
    phone = context.new_page()
    log_in(phone)
    for path, name in [
        ("/ui/monitor", "phone-monitor"),
        ("/ui/stats", "phone-statistics"),
        (f"/ui/inspect?q={SAMPLE}", "phone-inspect"),
        (f"/ui/history/{SAMPLE}", "phone-history"),
        ("/ui/restore", "phone-restore"),
    ]:
        phone.goto(path)
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= 392, (path, width)  # nothing wider than the screen
        shot(phone, name)
    assert phone.locator(".menu-button").is_visible()
    phone.click(".menu-button")
    assert phone.locator("nav >> text=Inspect").is_visible()
    context.close()


def test_analytics_charts_over_a_range(page: Any) -> None:
    log_in(page)
    page.goto("/ui/stats")
    page.fill("#range ~ form input[name=from]", "2024-03-01")
    page.fill("#range ~ form input[name=to]", "2024-03-31")
    page.click("button[name=show]")
    page.wait_for_url("**from=2024-03-01**")
    with httpx.Client(base_url=page.url.split("/ui/")[0], auth=("rex", PASSWORDS["rex"])) as api:
        span = {"from": "2024-03-01", "to": "2024-03-31", "per": "total"}
        groups = api.get("/api/analytics/aggregates", params={**span, "by": "group"}).json()
        types = api.get("/api/analytics/aggregates", params={**span, "by": "type"}).json()
        leads = api.get("/api/analytics/leadtimes", params=span).json()["groups"]
    bars = "[data-chart={}] svg.chart.wide rect.bar"
    assert page.locator(bars.format("periods")).count() == 31  # one per day of March
    assert page.locator(bars.format("by-type")).count() == len(types["rows"]) >= 1
    assert page.locator(bars.format("by-group")).count() == len(groups["rows"]) >= 1
    assert page.locator(bars.format("lead-times")).count() == 4 * len(leads)  # p50..p95
    titles = page.locator("[data-chart=periods] .wide rect.bar title").all_text_contents()
    assert titles[0].startswith("2024-03-01:") and titles[-1].startswith("2024-03-31:")
    shot(page, "statistics-range")


def test_a_dry_run_shows_its_plan(page: Any, ui_live: LiveServer) -> None:
    log_in(page)
    page.click("nav >> text=Restore")
    page.fill("input[name=from]", "2023-11-14")
    page.fill("input[name=to]", "2023-11-14")
    page.fill("textarea[name=filters]", "$workflowgroup=Invoice\ntype=snapshot-.*")
    page.click("button[name=dry_run]")
    page.wait_for_selector("text=dry run started")
    page.wait_for_selector("table.plan", timeout=30_000)  # the page is drawn again when done
    rows = page.locator("table.plan tr td:nth-child(2)")
    assert rows.all_inner_texts() == [ui_live.archive.list_instance(BIG_ORIGIN)[0]]
    assert "1 would be restored" in page.locator(".job [data-field=message]").inner_text()
    shot(page, "restore-dry-run")


def test_history_from_inspect(page: Any) -> None:
    log_in(page)
    page.goto(f"/ui/inspect?q={SAMPLE}")
    page.click("text=History")
    page.wait_for_selector("table.history")
    assert page.locator("table.history tr[data-step]").count() == 3
    shot(page, "history")


PAGES = [
    ("/ui/monitor", "monitor"),
    ("/ui/inspect?q=" + SAMPLE, "inspect"),
    ("/ui/snapshot/{newest}", "snapshot"),
    ("/ui/history/" + SAMPLE, "history"),
    ("/ui/resync", "resync"),
    ("/ui/restore", "restore"),
    ("/ui/backup", "backup"),
    ("/ui/stats", "statistics"),
    ("/ui/stats?from=2024-03-01&to=2024-03-31", "statistics-range"),
    ("/api/docs", "api-docs"),
    ("/ui/no-such-page", "not-found"),
]

# In the page: what a reader could not read. Text of the page under 11 px, a status badge
# or a first table column broken over lines, and in each chart shown: a label reaching
# past the chart's edge, two axis labels on top of each other, or labels drawn under 9 px.
UNREADABLE = r"""() => {
  const problems = [];
  const shown = (el) => el.getClientRects().length > 0;
  for (const el of document.querySelectorAll("body *")) {
    if (!shown(el) || el.closest("svg")) continue;
    const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (own && size < 11) problems.push(`${el.tagName}.${el.className}: ${size} px text`);
  }
  // a short word of a table cell (a name, a type, a size) broken over lines
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const words = node.textContent.trim().split(/\s+|(?<=[-\/])/);  // hyphens may break
    if (!node.parentElement.closest("td") || !shown(node.parentElement)) continue;
    const range = document.createRange();
    let at = node.textContent.indexOf(words[0]);
    for (const word of words) {
      at = node.textContent.indexOf(word, at);
      range.setStart(node, at);
      range.setEnd(node, at + word.length);
      at += word.length;
      const lines = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
      if (word.length <= 20 && lines.size > 1) problems.push(`word broken: ${word}`);
    }
  }
  for (const el of document.querySelectorAll(".state")) {
    if (shown(el) && el.getClientRects().length > 1) problems.push(`broken: ${el.textContent}`);
  }
  for (const svg of document.querySelectorAll("svg.chart")) {
    if (!shown(svg)) continue;
    const view = svg.viewBox.baseVal;
    const scale = svg.getBoundingClientRect().width / view.width;
    const boxes = [];
    for (const text of svg.querySelectorAll("text")) {
      const b = text.getBBox();
      const name = `${svg.getAttribute("aria-label")}: ${text.textContent}`;
      if (b.x < 0 || b.y < 0 || b.x + b.width > view.width || b.y + b.height > view.height) {
        problems.push(`cut: ${name} (${Math.round(b.x)}..${Math.round(b.x + b.width)})`);
      }
      const px = parseFloat(getComputedStyle(text).fontSize) * scale;
      if (px < 9) problems.push(`small: ${name} (${px.toFixed(1)} px)`);
      for (const other of boxes) {
        const apart = b.x >= other.b.x + other.b.width || other.b.x >= b.x + b.width
          || b.y >= other.b.y + other.b.height || other.b.y >= b.y + b.height;
        if (!apart) problems.push(`overlap: ${name} / ${other.name}`);
      }
      boxes.push({ b, name });
    }
  }
  return problems;
}"""

# In the page, in one call: the text and drawn width (null when not shown) of the first 20
# cells of the first column of the listings.
FIRST_CELLS = """() => Array.from(document.querySelectorAll("table.list td:first-child"))
  .slice(0, 20)
  .map((td) => [
    td.innerText,
    td.getClientRects().length ? td.getBoundingClientRect().width : null,
  ])"""


@pytest.mark.parametrize(
    ("width", "height", "prefix"), [(1280, 900, "desktop"), (390, 844, "phone")]
)
def test_every_page_at_desktop_and_phone_width(
    browser: Any, ui_live: LiveServer, width: int, height: int, prefix: str
) -> None:
    """Each page drawn, screenshot saved; nothing wider than the screen; job figures as
    labelled rows (drawn again by the script as the job is polled), no JSON; table ids
    and job names not broken letter by letter."""
    context = browser.new_context(base_url=ui_live.url, viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto("/ui/monitor")
    shot(page, f"{prefix}-login")
    assert page.evaluate(UNREADABLE) == []
    log_in(page)
    page.goto("/ui/backup")
    page.click("button[name=start]")
    page.wait_for_selector(".job [data-field=state].finished", timeout=30_000)
    newest = ui_live.archive.list_instance(SAMPLE)[0]
    for path, name in PAGES:
        page.goto(path.format(newest=newest))  # waits for "load": styles, script, icon
        if page.locator("[data-poll]").count():  # the script's one fetch: a job's state
            page.wait_for_load_state("networkidle")
        width_used = page.evaluate("document.documentElement.scrollWidth")
        assert width_used <= width + 2, (path, width_used)
        shot(page, f"{prefix}-{name}")
        assert page.evaluate(UNREADABLE) == [], path
        for tab in ("files", "xml") if name == "snapshot" else ():
            page.click(f"a.tab[href='#{tab}']")
            assert page.evaluate("document.documentElement.scrollWidth") <= width + 2, tab
            shot(page, f"{prefix}-snapshot-{tab}")
            assert page.evaluate(UNREADABLE) == [], tab
        for text, width_of_cell in page.evaluate(FIRST_CELLS):
            assert width_of_cell is None or width_of_cell >= 60, (path, text, width_of_cell)
    page.goto("/ui/backup")
    page.wait_for_load_state("networkidle")
    labels = page.locator(".job table.progress th").all_inner_texts()
    assert "Written" in labels, labels
    assert "{" not in page.locator(".job table.progress").first.inner_text()
    page.goto("/ui/resync")
    assert page.locator("input[name=from]").get_attribute("type") == "datetime-local"
    assert page.locator("h1").inner_text() == "Resync"
    page.goto("/ui/no-such-page")
    assert page.locator("h1").inner_text() == "404 Not Found"
    context.close()
    assert not errors, errors


def test_the_monitor_draws_itself_again(page: Any) -> None:
    page.clock.install()  # the page's timers run on a clock the test moves on
    log_in(page)
    page.evaluate("window.drawnBefore = true")
    page.clock.fast_forward(15_000)  # the monitor's refresh period (data-refresh-seconds)
    for _ in range(50):  # (wait_for_function evaluates a string: the CSP forbids that)
        page.wait_for_timeout(100)
        try:
            if page.evaluate("window.drawnBefore") is None:
                break
        except sync_api.Error:  # asked while the page was being loaded again
            continue
    page.wait_for_selector("h1")
    assert page.evaluate("window.drawnBefore") is None  # the page was loaded again
    assert page.locator("h1").inner_text() == "Monitor"


@pytest.mark.parametrize(("width", "prefix"), [(1280, "desktop"), (390, "phone")])
def test_chart_labels_fit_with_big_figures_and_long_names(
    browser: Any, width: int, prefix: str
) -> None:
    """Charts of extreme figures with the service's style sheet: seven-digit counts,
    a terabyte, 40-day lead times, long type names, a dozen workflow groups."""
    from imixs_archive.humanize import human_bytes, human_duration
    from imixs_archive.web import charts

    days = [(f"2024-03-{d:02d}", 1_234_567 * (d % 5 + 1)) for d in range(1, 32)]
    drawn = [
        charts.bar_chart("per day", days),
        charts.bar_chart("two days", [("2024-01-01", 3), ("2024-01-02", 1)]),
        charts.line_chart(
            "growth",
            [day for day, _ in days],
            [("logical", [1023.9 * 1024**3 * n / 30 for n in range(31)]), ("files", [5e9] * 31)],
            human_bytes,
        ),
        charts.hbar_chart(
            "bytes", [("logical (as carried)", 1023.9 * 1024**3), ("pieces", 1e9)], human_bytes
        ),
        charts.hbar_chart("types", [("snapshot-workitem-of-a-rather-long-type-name", 1_234_567)]),
        charts.grouped_bar_chart(
            "lead times",
            [f"Workflow group {n}" for n in range(12)],
            [(p, [86_400.0 * 3.3 * (n + 1) for n in range(12)]) for p in ("p50", "p75", "p95")],
            human_duration,
        ),
    ]
    style = (Path(charts.__file__).parent / "static" / "app.css").read_text()
    cards = "".join(f'<section class="card">{svg}</section>' for svg in drawn)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_content(f'<style>{style}</style><main><div class="grid">{cards}</div></main>')
    assert page.locator("svg.chart:visible").count() == len(drawn)
    assert page.evaluate(UNREADABLE) == []
    shot(page, f"{prefix}-charts-big-figures")
    context.close()


@pytest.fixture(scope="module")
def waiting_live(
    double: WorkflowDouble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """A service whose sync waits ten minutes before its first round."""
    tmp = Path(tmp_path_factory.mktemp("waiting"))
    yield from serve_beside(double.url, tmp, WORKFLOW_SYNC_INITIALDELAY="10m")


def test_the_monitor_counts_down_to_the_first_round(browser: Any, waiting_live: LiveServer) -> None:
    context = browser.new_context(
        base_url=waiting_live.url, viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    page.clock.install()  # the page's timers and Date.now() run on a clock the test moves on
    log_in(page)
    loop = page.locator("[data-sync-state]")
    assert loop.inner_text().startswith("waiting to start: the first round starts in ")
    before = int(page.locator("[data-countdown]").inner_text())
    page.clock.run_for(2500)
    after = int(page.locator("[data-countdown]").inner_text())
    assert 590 <= before <= 600 and before - 3 <= after <= before - 2, (before, after)
    assert page.locator("[data-pending]").inner_text() == "not read yet"
    shot(page, "monitor-first-round-wait")
    context.close()
