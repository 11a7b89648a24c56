"""The workflow client's HTTP layer over real loopback sockets: kept-alive connections,
connections the server closes, truncated and chunked bodies, timeouts, threads, TLS."""

from __future__ import annotations

import base64
import random
import socket
import threading
import time
from pathlib import Path

import pytest

from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.workflow import WorkflowClient, WorkflowUnavailableError
from imixs_archive.workflow.transport import ConnectionPool, _bypassed
from support.canned_http import Canned, CannedServer, Seen, TunnelProxy, self_signed


def _echo(seen: Seen) -> Canned:
    return Canned(body=f"{seen.method} {seen.path} {len(seen.body)}".encode())


def test_connections_are_kept_alive_and_reused() -> None:
    with CannedServer(_echo) as server, ConnectionPool() as pool:
        for n in range(5):
            reply = pool.request("GET", server.url(f"/a?n={n}"), {}, None)
            assert (reply.status, reply.body) == (200, f"GET /a?n={n} 0".encode())
        assert server.connections == 1


def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    with (
        CannedServer(lambda seen: Canned(body=b"ok", close_after=True)) as server,
        ConnectionPool() as pool,
    ):
        for method in ("GET", "POST", "DELETE", "POST"):
            assert pool.request(method, server.url("/x"), {}, b"").body == b"ok"
            time.sleep(0.05)  # the server's close arrives while the connection is idle
        assert server.connections == 4
        assert [seen.method for seen in server.seen] == ["GET", "POST", "DELETE", "POST"]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_request_racing_the_servers_close_is_sent_again(method: str) -> None:
    # The close arrives while the next request is on its way: GET (idempotent) and a
    # POST the caller allows to be resent go out again on a new connection.
    with (
        CannedServer(lambda seen: Canned(body=b"ok", close_after=True)) as server,
        ConnectionPool() as pool,
    ):
        for _ in range(20):
            assert pool.request(method, server.url("/x"), {}, b"", resend=True).body == b"ok"
        assert len(server.seen) == 20


def test_a_body_shorter_than_announced_is_an_error() -> None:
    body = random.Random(1).randbytes(300_000)
    with (
        CannedServer(lambda seen: Canned(body=body, short_by=1000)) as server,
        ConnectionPool() as pool,
    ):
        with pytest.raises(WorkflowUnavailableError, match="1000 bytes before"):
            pool.request("GET", server.url("/big"), {}, None)
        with (
            pytest.raises(WorkflowUnavailableError),
            pool.open("GET", server.url("/big"), {}) as response,
        ):
            for _ in response.iter_blocks():
                pass


def test_chunked_bodies_both_ways() -> None:
    body = random.Random(2).randbytes(50_000)
    with (
        CannedServer(lambda seen: Canned(body=seen.body, chunked=True)) as server,
        ConnectionPool() as pool,
    ):
        blocks = (body[n : n + 7000] for n in range(0, len(body), 7000))
        reply = pool.request("POST", server.url("/echo"), {}, blocks)
        assert reply.body == body
        assert server.seen[0].headers.get("Transfer-Encoding") == "chunked"
        assert pool.request("POST", server.url("/echo"), {}, b"again").body == b"again"
        assert server.connections == 1


def test_a_stream_left_unread_closes_its_connection() -> None:
    body = random.Random(3).randbytes(1_000_000)
    with CannedServer(lambda seen: Canned(body=body)) as server, ConnectionPool() as pool:
        with pool.open("GET", server.url("/big"), {}) as response:
            first = next(response.iter_blocks())
            assert first == body[: len(first)]
        reply = pool.request("GET", server.url("/big"), {}, None)
        assert reply.body == body
        assert server.connections == 2  # the half-read one was not reused
        pool.request("GET", server.url("/big"), {}, None)
        assert server.connections == 2  # the fully read one was


def test_read_timeout_and_refused_connection() -> None:
    with (
        CannedServer(lambda seen: Canned(body=b"late", delay=0.5)) as server,
        ConnectionPool(read_timeout=0.1) as pool,
    ):
        with pytest.raises(WorkflowUnavailableError, match="Timeout") as caught:
            pool.request("GET", server.url("/slow"), {}, None)
        assert not caught.value.down
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with ConnectionPool(connect_timeout=1) as pool:
        with pytest.raises(WorkflowUnavailableError) as refused:
            pool.request("GET", f"http://127.0.0.1:{port}/", {}, None)
        assert refused.value.down
        with pytest.raises(WorkflowUnavailableError, match="not an http"):
            pool.request("GET", "ftp://127.0.0.1/", {}, None)


def test_a_body_goes_out_under_the_read_timeout_not_the_connect_timeout() -> None:
    # The server takes the body only after 0.6 s: longer than the connect timeout, so a
    # large upload (a restore) must wait as long as the read timeout allows.
    body = random.Random(4).randbytes(32 * 1024 * 1024)
    with (
        CannedServer(_echo, read_delay=0.6) as server,
        ConnectionPool(connect_timeout=0.2, read_timeout=5) as pool,
    ):
        for _ in range(2):  # on a new connection, then on the kept-alive one
            blocks = (body[n : n + 65536] for n in range(0, len(body), 65536))
            reply = pool.request("POST", server.url("/up"), {}, blocks)
            assert reply.body == f"POST /up {len(body)}".encode()
        assert server.connections == 1


def test_threads_share_the_pool() -> None:
    errors: list[BaseException] = []
    with CannedServer(_echo) as server, ConnectionPool(max_idle=8) as pool:

        def work(n: int) -> None:
            try:
                for k in range(30):
                    body = f"{n}-{k}".encode()
                    reply = pool.request("PUT", server.url(f"/t/{n}/{k}"), {}, body)
                    assert reply.body == f"PUT /t/{n}/{k} {len(body)}".encode()
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert len(server.seen) == 240
        assert server.connections <= 8  # one per thread at most, each reused


def test_tls(tmp_path: Path) -> None:
    with (
        self_signed(tmp_path) as (server_tls, client_tls),
        CannedServer(_echo, tls=server_tls) as server,
    ):
        with ConnectionPool(tls=client_tls) as pool:
            for _ in range(3):
                reply = pool.request("GET", server.url("/s", scheme="https"), {}, None)
                assert reply.body == b"GET /s 0"
            assert server.connections == 1
        with ConnectionPool() as untrusting, pytest.raises(WorkflowUnavailableError) as caught:
            untrusting.request("GET", server.url("/s", scheme="https"), {}, None)
        assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)


def test_client_trusts_the_ca_file_of_the_settings(tmp_path: Path) -> None:
    def events(seen: Seen) -> Canned:
        return Canned(body=b"<data/>", headers={"Content-Type": "application/xml"})

    with (
        self_signed(tmp_path) as (server_tls, _client_tls),
        CannedServer(events, tls=server_tls) as server,
    ):
        settings = {"WORKFLOW_SERVICE_ENDPOINT": server.url("/api", scheme="https")}
        with (
            WorkflowClient.from_settings(load_settings(settings)) as untrusting,
            pytest.raises(WorkflowUnavailableError, match="CERTIFICATE_VERIFY_FAILED"),
        ):
            untrusting.read_events()
        settings["WORKFLOW_REST_CAFILE"] = str(tmp_path / "cert.pem")
        with WorkflowClient.from_settings(load_settings(settings)) as client:
            assert client.read_events() == []
    settings["WORKFLOW_REST_CAFILE"] = str(tmp_path / "missing.pem")
    with pytest.raises(ConfigError, match="WORKFLOW_REST_CAFILE"):
        WorkflowClient.from_settings(load_settings(settings))


def test_plain_http_goes_through_the_proxy_of_the_environment() -> None:
    def proxy_answer(seen: Seen) -> Canned:
        return Canned(body=f"{seen.method} {seen.path}".encode())

    with CannedServer(proxy_answer) as proxy:
        proxies = {"http": f"http://archive:s%40cret@127.0.0.1:{proxy.port}"}
        with ConnectionPool(proxies=proxies) as pool:
            reply = pool.request("GET", "http://workflow.example:8080/api/x?a=1", {}, None)
            assert reply.body == b"GET http://workflow.example:8080/api/x?a=1"
            pool.request("GET", "http://workflow.example:8080/api/y", {}, None)
        assert proxy.connections == 1  # kept alive through the proxy too
        auth = proxy.seen[0].headers["Proxy-Authorization"]
        assert auth == "Basic " + base64.b64encode(b"archive:s@cret").decode()


def test_https_tunnels_through_the_proxy(tmp_path: Path) -> None:
    with (
        self_signed(tmp_path, ("workflow.example",)) as (server_tls, client_tls),
        CannedServer(_echo, tls=server_tls) as server,
        TunnelProxy(server.port) as proxy,
    ):
        proxies = {"https": proxy.url}
        with ConnectionPool(tls=client_tls, proxies=proxies) as pool:
            for _ in range(2):
                reply = pool.request("GET", "https://workflow.example/api/z", {}, None)
                assert reply.body == b"GET /api/z 0"
        assert [line for line, _ in proxy.connects] == ["workflow.example:443"]


def test_no_proxy_and_loopback_go_direct() -> None:
    with CannedServer(_echo) as server:
        proxies = {"http": "http://127.0.0.1:1", "no": "other.example"}
        with ConnectionPool(proxies=proxies) as pool:  # the proxy would refuse
            assert pool.request("GET", server.url("/d"), {}, None).body == b"GET /d 0"
    assert _bypassed("a.internal.example", "localhost, .internal.example")
    assert _bypassed("internal.example", ".internal.example")
    assert _bypassed("host", "*")
    assert _bypassed("host.example", "HOST.example:8080")
    assert not _bypassed("notinternal.example", "internal.example")
    assert not _bypassed("example.org", "")
