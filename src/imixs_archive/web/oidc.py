"""OIDC bearer tokens: JWTs signed by the configured issuer's keys (RS256 and friends).

With ``ARCHIVE_OIDC_ISSUER`` set, the issuer's discovery document
(``<issuer>/.well-known/openid-configuration``) names its JWKS; keys are fetched and
cached by PyJWT's ``PyJWKClient`` (a new ``kid`` triggers a refetch). A token must carry
``iss`` equal to the issuer, an unexpired ``exp``, the audience when
``ARCHIVE_OIDC_AUDIENCE`` is set, and ``reader`` or ``manager`` in the roles claim
(``ARCHIVE_OIDC_ROLES_CLAIM``, a dotted path such as ``realm_access.roles``).

PyJWT (with ``cryptography``) is an optional dependency: ``pip install 'imixs-archive[oidc]'``.
"""

from __future__ import annotations

import importlib
import json
import threading
import urllib.request
from typing import Any

from imixs_archive.config import Settings
from imixs_archive.errors import ConfigError
from imixs_archive.web.auth import Principal
from imixs_archive.web.credentials import Role

ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256"]
FETCH_TIMEOUT = 10.0


def oidc_verifier(settings: Settings) -> OidcVerifier | None:
    if not settings.oidc_issuer.strip():
        return None
    return OidcVerifier(
        settings.oidc_issuer.strip(), settings.oidc_audience.strip(), settings.oidc_roles_claim
    )


class OidcVerifier:
    def __init__(self, issuer: str, audience: str = "", roles_claim: str = "roles") -> None:
        try:
            self._jwt: Any = importlib.import_module("jwt")
        except ImportError:
            raise ConfigError(
                "ARCHIVE_OIDC_ISSUER needs PyJWT: pip install 'imixs-archive[oidc]'"
            ) from None
        self.issuer = issuer.rstrip("/")
        self.audience = audience
        self.roles_claim = roles_claim
        self._client: Any = None
        self._lock = threading.Lock()

    def _keys(self) -> Any:
        with self._lock:
            if self._client is None:
                url = f"{self.issuer}/.well-known/openid-configuration"
                with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as answer:
                    discovery = json.load(answer)
                self._client = self._jwt.PyJWKClient(discovery["jwks_uri"], timeout=FETCH_TIMEOUT)
            return self._client

    def verify(self, token: str) -> Principal | None:
        jwt = self._jwt
        if token.count(".") != 2:
            return None  # not a JWT: maybe an API token that did not match
        try:
            key = self._keys().get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=ALGORITHMS,
                audience=self.audience or None,
                issuer=self.issuer,
                options={"require": ["exp", "iss"], "verify_aud": bool(self.audience)},
            )
        except (jwt.PyJWTError, OSError, KeyError, ValueError):
            return None
        role = self._role(claims)
        if role is None:
            return None
        name = str(claims.get("preferred_username") or claims.get("sub") or "oidc")
        return Principal(name, role, "oidc")

    def _role(self, claims: dict[str, Any]) -> Role | None:
        value: Any = claims
        for part in self.roles_claim.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        roles = {value} if isinstance(value, str) else set(value or [])
        if Role.MANAGER.value in roles:
            return Role.MANAGER
        if Role.READER.value in roles:
            return Role.READER
        if Role.AUDITOR.value in roles:
            return Role.AUDITOR
        return None
