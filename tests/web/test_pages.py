"""What the pages show a person, read over HTTP (the browser tests look at them too)."""

from __future__ import annotations

from web.live import BIG_ORIGIN, LiveServer

SNAPSHOT = f"{BIG_ORIGIN}-1700000000000"


def test_the_restore_button_is_disabled_with_a_reason_without_a_workflow(
    live: LiveServer,
) -> None:
    with live.client("manager") as client:
        page = client.get(f"/ui/snapshot/{SNAPSHOT}").text
    button = page.split('name="restore"', 1)[1].split(">", 1)[0]
    assert "disabled" in button and "WORKFLOW_SERVICE_ENDPOINT" in button


def test_the_api_docs_page_renders_its_descriptions(live: LiveServer) -> None:
    with live.client("reader") as client:
        page = client.get("/api/docs")
    assert page.status_code == 200 and "<h1>REST API</h1>" in page.text
    assert "``" not in page.text  # reStructuredText code, drawn as code
    assert '<div class="hint">' in page.text and "<code>" in page.text.split("<table")[1]


def test_an_unknown_ui_page_is_an_html_404(live: LiveServer) -> None:
    with live.client("reader") as client:
        page = client.get("/ui/no-such-page")
        api = client.get("/api/no-such-endpoint")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "<h1>404 Not Found</h1>" in page.text and "/ui/no-such-page" in page.text
    assert api.status_code == 404 and api.headers["content-type"] == "application/problem+json"
