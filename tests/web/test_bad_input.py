"""Bad documents pushed over HTTP: one clear 4xx problem each, never a 500."""

from __future__ import annotations

import pytest

from web.live import LiveServer

DEEP = 900


@pytest.mark.parametrize(
    ("body", "content_type", "says"),
    [
        (
            '{"item":[{"name":"a","value":' + "[" * DEEP + "]" * DEEP + "}]}",
            "application/json",
            "nested deeper than",
        ),
        ("[" * 100_000 + "]" * 100_000, "application/json", "nested deeper than"),
        (
            '<?xml version="1.0" encoding="EBCDIC-XYZ"?><document/>',
            "application/xml",
            "unsupported encoding",
        ),
        (
            '{"item":[{"name":"$uniqueid","value":["270e3a6d-a0e4-4875-89f1-3b418859abe5-'
            '1700000000000"]},{"name":"$modified","value":[{"@type":"xs:dateTime",'
            '"$":"2023-11-14T22:13:20.000Z"}]},{"name":"s","value":["a\\u0000b"]}]}',
            "application/json",
            "XML cannot carry",
        ),
    ],
    ids=["json-900-deep", "json-100000-deep", "xml-unknown-encoding", "json-nul"],
)
def test_a_bad_push_is_a_clear_400(
    live: LiveServer, body: str, content_type: str, says: str
) -> None:
    with live.client("manager") as client:
        answer = client.post(
            "/api/archive/snapshot", content=body, headers={"Content-Type": content_type}
        )
    assert answer.status_code == 400, answer.text
    assert says in answer.json()["message"]
    assert len(answer.content) < 4096  # the input is not echoed back
