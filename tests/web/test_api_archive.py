"""The archive endpoints over HTTP (in process; a chunked upload over the socket): section 6
of the reference and the new ones."""

from __future__ import annotations

import hashlib
import http.client
import itertools
import json
from pathlib import Path
from urllib.parse import quote, urlsplit

from imixs_archive.document.json_codec import read_json
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import iter_xml, to_xml
from imixs_archive.web.streaming import in_data
from support.snapshots import make_snapshot
from web.live import BIG, BIG_ORIGIN, TOKENS, LiveServer

SNAPSHOT = f"{BIG_ORIGIN}-1700000000000"
NEWEST = f"{BIG_ORIGIN}-1700000120000"


def test_snapshot_in_xml_json_and_html(live: LiveServer) -> None:
    with live.client("reader") as client:
        xml = client.get(f"/api/archive/snapshot/{SNAPSHOT}")
        assert xml.status_code == 200 and xml.headers["content-type"].startswith("application/xml")
        assert b"<data " in xml.content[:300]  # as the Java service: <data><document>
        (doc,) = read_xml(xml.content)
        assert doc["$file"][0]["big.bin"][1] == BIG  # files merged back
        as_json = client.get(
            f"/api/archive/snapshot/{SNAPSHOT}", headers={"Accept": "application/json"}
        )
        assert as_json.headers["content-type"] == "application/json"
        assert read_json(as_json.content)[0]["$uniqueid"] == [SNAPSHOT]
        forced = client.get(
            f"/api/archive/snapshot/{SNAPSHOT}?format=json", headers={"Accept": "text/html"}
        )
        assert forced.headers["content-type"] == "application/json"
        weighted = client.get(
            f"/api/archive/snapshot/{SNAPSHOT}",
            headers={"Accept": "application/xml;q=0.5, application/json;q=0.9"},
        )
        assert weighted.headers["content-type"] == "application/json"
        html = client.get(f"/api/archive/snapshot/{SNAPSHOT}", headers={"Accept": "text/html"})
        assert html.headers["content-type"].startswith("text/html")
        assert "<table" in html.text and "big.bin" in html.text
        assert "content-security-policy" in html.headers
        assert client.get(f"/api/archive/snapshot/{SNAPSHOT}?format=yaml").status_code == 400


def test_the_java_snapshot_endpoint_passes_the_stored_xml_through(live: LiveServer) -> None:
    """The XML answer is the stored XML as ``archive get`` writes it, files spliced in,
    wrapped in ``<data>``: not parsed and written again, and the same document."""
    stored = b"".join(live.archive.xml_with_files(SNAPSHOT).iter_bytes())
    assert stored.startswith(b"<?xml") and b"<document xmlns:xs=" in stored[:200]
    with live.client("reader") as client:
        answer = client.get(f"/api/archive/snapshot/{SNAPSHOT}").content
    inner = stored[stored.index(b"<document") :]
    assert answer.startswith(b"<?xml") and b"\n<data xmlns:xs=" in answer[:200]
    assert answer.endswith(inner + b"</data>\n")  # the stored bytes, as they are
    assert read_xml(answer) == [live.archive.load(SNAPSHOT, with_files=True)]


def test_stored_xml_is_wrapped_only_when_its_head_allows() -> None:
    doc = make_snapshot(1, files={"a.txt": b"spliced"})
    written = b"".join(iter_xml(doc, collection=False))
    bare = written[written.index(b"<document") :]
    for head in (written, bare, b"  \n" + bare):
        answer = in_data(iter([head]))
        assert answer is not None, head[:60]
        assert read_xml(b"".join(answer)) == [doc]
    latin = b'<?xml version="1.0" encoding="ISO-8859-1"?>' + bare
    collection = b"".join(iter_xml(doc, collection=True))
    for refused in (latin, collection, b"", b"<doc/>"):
        assert in_data(iter([refused])) is None, refused[:60]


def test_unknown_and_malformed_snapshots(live: LiveServer) -> None:
    with live.client("reader") as client:
        missing = client.get(f"/api/archive/snapshot/{BIG_ORIGIN}-1111111111111")
        assert missing.status_code == 404 and missing.json()["status"] == 404
        bad = client.get("/api/archive/snapshot/not-an-id")
        assert bad.status_code == 400 and "not a snapshot id" in bad.json()["message"]
        no_file = client.get(f"/api/archive/snapshot/{SNAPSHOT}/file/nope.pdf")
        assert no_file.status_code == 404
        assert client.get("/api/archive/md5/0123456789ABCDEF0123456789ABCDEF").status_code == 404


def test_file_download_with_length_type_and_etag(live: LiveServer) -> None:
    with live.client("reader") as client:
        answer = client.get(f"/api/archive/snapshot/{SNAPSHOT}/file/big.bin")
    assert answer.status_code == 200 and answer.content == BIG
    assert answer.headers["content-length"] == str(len(BIG))
    assert answer.headers["content-type"] == "application/pdf"  # as stored
    assert answer.headers["accept-ranges"] == "bytes"
    assert answer.headers["etag"] == f'"{hashlib.md5(BIG).hexdigest().upper()}"'
    assert answer.headers["content-security-policy"] == "sandbox"
    assert answer.headers["content-disposition"].startswith("inline;")


def test_file_names_are_url_decoded(live: LiveServer) -> None:
    name = "Rechnung März 2024/#1.txt"
    doc = make_snapshot(9, origin=BIG_ORIGIN, files={name: b"umlaut"})
    live.archive.store(doc)
    sid = doc.get_first("$uniqueid")
    try:
        with live.client("reader") as client:
            answer = client.get(
                f"/api/archive/snapshot/{sid}/file/{quote(name, safe='')}",
                params={"download": "true"},
            )
    finally:
        live.archive.delete(sid)
    assert answer.status_code == 200 and answer.content == b"umlaut"
    assert "attachment;" in answer.headers["content-disposition"]
    assert (
        "filename*=UTF-8''Rechnung%20M%C3%A4rz%202024%2F%231.txt"
        in answer.headers["content-disposition"]
    )


def test_range_requests(live: LiveServer) -> None:
    url = f"/api/archive/snapshot/{SNAPSHOT}/file/big.bin"
    size = len(BIG)
    with live.client("reader") as client:
        part = client.get(url, headers={"Range": "bytes=1000-1999999"})
        assert part.status_code == 206 and part.content == BIG[1000:2000000]
        assert part.headers["content-range"] == f"bytes 1000-1999999/{size}"
        assert part.headers["content-length"] == str(2000000 - 1000)
        tail = client.get(url, headers={"Range": "bytes=-10"})
        assert tail.status_code == 206 and tail.content == BIG[-10:]
        open_end = client.get(url, headers={"Range": f"bytes={size - 3}-"})
        assert open_end.content == BIG[-3:]
        beyond = client.get(url, headers={"Range": f"bytes={size}-"})
        assert beyond.status_code == 416 and beyond.headers["content-range"] == f"bytes */{size}"
        several = client.get(url, headers={"Range": "bytes=0-1,5-6"})
        assert several.status_code == 200 and several.content == BIG  # allowed: whole file
        stale = client.get(url, headers={"Range": "bytes=0-1", "If-Range": '"OTHER"'})
        assert stale.status_code == 200
        md5 = hashlib.md5(BIG).hexdigest()
        by_md5 = client.get(f"/api/archive/md5/{md5}", headers={"Range": "bytes=0-9"})
        assert by_md5.status_code == 206 and by_md5.content == BIG[:10]
        assert client.get(f"/api/archive/md5/{md5.lower()}").content == BIG


def test_md5_answers_with_the_content_type_asked_for(live: LiveServer) -> None:
    """Java's /archive/md5/{md5}?contentType=: the type of the answer, octet-stream else."""
    md5 = hashlib.md5(BIG).hexdigest().upper()
    with live.client("reader") as client:
        plain = client.get(f"/api/archive/md5/{md5}")
        assert plain.headers["content-type"] == "application/octet-stream"
        pdf = client.get(f"/api/archive/md5/{md5}", params={"contentType": "application/pdf"})
        assert pdf.status_code == 200 and pdf.headers["content-type"] == "application/pdf"
        assert pdf.content == BIG and pdf.headers["content-security-policy"] == "sandbox"
        text = client.get(
            f"/api/archive/md5/{md5}", params={"contentType": 'text/plain; charset="utf-8"'}
        )
        assert text.headers["content-type"] == 'text/plain; charset="utf-8"'
        for bad in ["pdf", "text/html\r\nSet-Cookie: a=b", "a/b; c"]:
            answer = client.get(f"/api/archive/md5/{md5}", params={"contentType": bad})
            assert answer.status_code == 400, bad
            assert "set-cookie" not in answer.headers


def test_metadata_endpoints(live: LiveServer) -> None:
    with live.client("reader") as client:
        text = client.get("/api/metadata/")
        assert text.headers["content-type"].startswith("text/plain")
        assert text.text == "syncpoint=0\ncount=0\n"
        assert client.get("/api/metadata").text == text.text
        state = client.get("/api/archive/metadata?format=json")
        assert state.status_code == 200 and "data" in state.json()


def test_instance_listing_pages_newest_first(live: LiveServer) -> None:
    with live.client("reader") as client:
        first = client.get(f"/api/archive/instances/{BIG_ORIGIN}/snapshots", params={"limit": 2})
        body = first.json()
        assert [s["snapshot"] for s in body["snapshots"]] == [NEWEST, f"{BIG_ORIGIN}-1700000060000"]
        assert body["snapshots"][0]["files"][0] == {
            "name": "big.bin",
            "content_type": "application/pdf",
            "size": len(BIG),
        }
        assert body["next"] == f"{BIG_ORIGIN}-1700000060000"
        rest = client.get(
            f"/api/archive/instances/{BIG_ORIGIN}/snapshots",
            params={"limit": 2, "after": body["next"]},
        ).json()
        assert [s["snapshot"] for s in rest["snapshots"]] == [SNAPSHOT] and rest["next"] is None
        assert (
            client.get(f"/api/archive/instances/{BIG_ORIGIN}/snapshots?limit=0").status_code == 400
        )


def test_date_range_listing_pages_with_a_cursor(live: LiveServer) -> None:
    seen: list[str] = []
    cursor = None
    with live.client("reader") as client:
        while True:
            params = {"from": "2023-11-01", "to": "2024-12-31", "limit": 4}
            if cursor:
                params["cursor"] = cursor
            body = client.get("/api/archive/snapshots", params=params).json()
            seen += [s["snapshot"] for s in body["snapshots"]]
            cursor = body["next"]
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) == 12  # 9 samples + 3 of our own
        bad = client.get("/api/archive/snapshots", params={"from": "2024-01-01", "cursor": "@@"})
        assert bad.status_code == 400
        assert client.get("/api/archive/snapshots").status_code == 400  # from is required


def test_push_xml_then_again_then_delete(live: LiveServer) -> None:
    doc = make_snapshot(
        20, origin="0babe000-0000-4000-8000-000000000020", files={"a.txt": b"pushed"}
    )
    sid = doc.get_first("$uniqueid")
    body = to_xml(doc)
    with live.client("manager") as client:
        first = client.post(
            "/api/archive/snapshot", content=body, headers={"Content-Type": "application/xml"}
        )
        assert first.status_code == 201, first.text
        assert first.json()["stored"][0]["snapshot"] == sid and first.json()["stored"][0]["new"]
        again = client.post("/api/archive/snapshot", content=iter([body[:100], body[100:]]))
        assert again.status_code == 200 and again.json()["stored"][0]["new"] is False
        assert client.get(f"/api/archive/snapshot/{sid}/file/a.txt").content == b"pushed"
        gone = client.delete(f"/api/archive/snapshot/{sid}")
        assert gone.status_code == 200 and gone.json() == {"snapshot": sid, "deleted": True}
        assert client.get(f"/api/archive/snapshot/{sid}").status_code == 404
        assert client.delete(f"/api/archive/snapshot/{sid}").status_code == 404


def test_push_json_with_a_token(live: LiveServer) -> None:
    from imixs_archive.document.json_codec import to_json

    doc = make_snapshot(21, origin="0babe000-0000-4000-8000-000000000021")
    with live.client("token-manager") as client:
        answer = client.post(
            "/api/archive/snapshot",
            content=to_json(doc),
            headers={"Content-Type": "application/json"},
        )
    assert answer.status_code == 201, answer.text
    assert live.archive.exists(doc.get_first("$uniqueid"))


def test_push_of_bad_documents_is_a_problem_listing_them(live: LiveServer) -> None:
    good = make_snapshot(22, origin="0babe000-0000-4000-8000-000000000022")
    bad = make_snapshot(23, origin="0babe000-0000-4000-8000-000000000022")
    bad["$uniqueid"] = ["not-a-snapshot-id"]
    with live.client("manager") as client:
        mixed = client.post("/api/archive/snapshot", content=to_xml([good, bad]))
        assert mixed.status_code == 400
        problem = mixed.json()
        assert problem["stored"][0]["snapshot"] == good.get_first("$uniqueid")
        assert "not a snapshot id" in problem["failed"][0]["message"]
        broken = client.post("/api/archive/snapshot", content=b"<document><item name='x'>")
        assert broken.status_code == 400 and broken.json()["failed"]
        hostile = client.post(
            "/api/archive/snapshot",
            content=b'<!DOCTYPE d [<!ENTITY e "x">]><document/>',
        )
        assert hostile.status_code == 400 and "Traceback" not in hostile.text
        empty = client.post("/api/archive/snapshot", content=b"")
        assert empty.status_code == 400


def test_oversized_uploads_get_413(live: LiveServer) -> None:
    big = b"<data>" + b" " * (1024 * 1024 + 10) + b"</data>"  # over ARCHIVE_MAX_UPLOAD_MB=1
    with live.socket_client("manager") as client:  # a chunked body: the socket's
        declared = client.post("/api/archive/snapshot", content=big)
        assert declared.status_code == 413 and declared.json()["status"] == 413

        def chunks() -> object:
            for start in range(0, len(big), 65536):
                yield big[start : start + 65536]

        streamed = client.post("/api/archive/snapshot", content=chunks())  # chunked: no length
        assert streamed.status_code == 413
        assert "ARCHIVE_MAX_UPLOAD_MB" in streamed.json()["message"]


def test_stats_and_dashboard(live: LiveServer) -> None:
    with live.client("reader") as client:
        stats = client.get("/api/stats").json()
        assert stats["snapshots"] >= 12 and stats["dedup_ratio"] >= 1
        board = client.get("/api/stats/dashboard?refresh=true").json()
    assert board["stats"]["snapshots"] == stats["snapshots"]
    assert {t["type"] for t in board["types"]} >= {"snapshot-workitem"}
    growth = board["growth"]
    assert growth[-1]["snapshots"] == stats["snapshots"]
    assert all(a["day"] < b["day"] for a, b in itertools.pairwise(growth))


def test_openapi_description_is_served(live: LiveServer) -> None:
    with live.client() as client:
        schema = client.get("/api/openapi.json")
    assert schema.status_code == 200
    paths = json.loads(schema.text)["paths"]
    assert "/api/archive/snapshot/{snapshot_id}/file/{name}" in paths
    assert "delete" in paths["/api/archive/snapshot/{snapshot_id}"]


def test_push_report_counts_every_documents_attachments(live: LiveServer) -> None:
    """samples/ticket-1.xml: three snapshots carrying 128, 128 + 10389 and 128 + 10389
    bytes of files; the reader parses ahead, each still counts its own."""
    body = (Path(__file__).resolve().parents[2] / "samples" / "ticket-1.xml").read_bytes()
    body = body.replace(b"7c9e6679-7425-40de-944b", b"0babe000-0000-4000-8000")  # not there yet
    with live.client("manager") as client:
        pushed = client.post(
            "/api/archive/snapshot", content=body, headers={"Content-Type": "application/xml"}
        )
    assert pushed.status_code == 201, pushed.text
    stored = pushed.json()["stored"]
    assert [s["logical_bytes"] for s in stored] == [128, 10_517, 10_517]


def test_the_java_endpoints_answer_head_as_jax_rs_does(live: LiveServer) -> None:
    """HEAD on every GET resource of the Java service (issue 45 item 5): the GET's status
    and headers, no body; over the socket, as a Java client asks."""
    where = urlsplit(live.url)
    auth = {"Authorization": f"Bearer {TOKENS['reader']}"}
    big_md5 = hashlib.md5(BIG).hexdigest().upper()
    paths = [
        f"/api/archive/snapshot/{SNAPSHOT}",
        f"/api/archive/snapshot/{SNAPSHOT}/file/big.bin",
        f"/api/archive/md5/{big_md5}?contentType=application/pdf",
        "/api/archive/metadata",
        "/api/metadata",
        "/api/metadata/",
    ]
    kept = ("content-type", "content-length", "etag", "accept-ranges")
    for path in paths:
        answers = {}
        for method in ("GET", "HEAD"):
            connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
            try:
                connection.request(method, path, headers=auth)
                response = connection.getresponse()
                headers = {k.lower(): v for k, v in response.getheaders() if k.lower() in kept}
                answers[method] = (response.status, headers, response.read())
            finally:
                connection.close()
        (got, got_headers, body), (head, head_headers, nothing) = answers["GET"], answers["HEAD"]
        assert got == head == 200 and body and nothing == b"", path
        assert head_headers == got_headers, path
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    try:
        connection.request("HEAD", f"/api/archive/md5/{'0' * 32}", headers=auth)
        assert connection.getresponse().status == 404
    finally:
        connection.close()
