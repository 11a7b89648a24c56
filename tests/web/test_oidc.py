"""OIDC bearer tokens against an issuer of our own (discovery + JWKS over loopback HTTP)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

jwt = pytest.importorskip("jwt", reason="PyJWT is the optional OIDC dependency")
rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")

from imixs_archive.web.oidc import OidcVerifier  # noqa: E402
from web.live import LiveServer, serve_store  # noqa: E402


class Issuer:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = {"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.endswith("/.well-known/openid-configuration"):
                    body: Any = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"}
                else:
                    body = issuer.jwks
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/realms/imixs"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, key: Any = None, **claims: Any) -> str:
        body = {"iss": self.url, "aud": "archive", "exp": time.time() + 60, "sub": "u1", **claims}
        return str(jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": "k1"}))


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    found = Issuer()
    yield found
    found.server.shutdown()
    found.server.server_close()


@pytest.fixture(scope="module")
def oidc_live(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    env = {
        "ARCHIVE_OIDC_ISSUER": issuer.url,
        "ARCHIVE_OIDC_AUDIENCE": "archive",
        "ARCHIVE_OIDC_ROLES_CLAIM": "realm_access.roles",
    }
    yield from serve_store(Path(tmp_path_factory.mktemp("oidc")), env)


def call(live: LiveServer, token: str, method: str = "GET", path: str = "/api/stats") -> int:
    with live.client(headers={"Authorization": f"Bearer {token}"}) as client:
        return client.request(method, path).status_code


def test_oidc_roles_from_the_configured_claim(oidc_live: LiveServer, issuer: Issuer) -> None:
    reader = issuer.token(realm_access={"roles": ["reader"]}, preferred_username="olga")
    manager = issuer.token(realm_access={"roles": ["manager", "other"]})
    assert call(oidc_live, reader) == 200
    assert call(oidc_live, reader, "POST", "/api/verify") == 403
    assert call(oidc_live, manager, "POST", "/api/verify") == 202


def test_oidc_rejects_bad_tokens(oidc_live: LiveServer, issuer: Issuer) -> None:
    roles = {"realm_access": {"roles": ["manager"]}}
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for token in [
        issuer.token(exp=time.time() - 10, **roles),  # expired
        issuer.token(aud="someone-else", **roles),  # another audience
        issuer.token(iss="https://other.example", **roles),  # another issuer
        issuer.token(key=stranger, **roles),  # not signed by the issuer
        issuer.token(realm_access={"roles": ["guest"]}),  # no role of ours
        "a.b.c",
    ]:
        assert call(oidc_live, token) == 401


def test_without_pyjwt_the_setting_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from imixs_archive.errors import ConfigError

    real = importlib.import_module

    def fake(name: str, *args: Any) -> Any:
        if name == "jwt":
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(ConfigError, match=r"imixs-archive\[oidc\]"):
        OidcVerifier("https://issuer.example")
