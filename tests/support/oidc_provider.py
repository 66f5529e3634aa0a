"""An OIDC identity provider of the tests' own on 127.0.0.1: discovery and a client-credentials
token endpoint (RFC 6749 4.4), issuing short-lived random tokens it can later vouch for.

Tests check what the connector sent (the client secret arrives in HTTP Basic, per RFC 6749
2.3.1) and whether a token was still valid when Armada saw it (`valid`).
"""

from __future__ import annotations

import base64
import contextlib
import secrets
import time
import urllib.parse
from typing import Iterator

from support.fake_http import LocalServer, QuietHandler, serving


class OidcProvider(LocalServer):
    def __init__(self, client_id: str, client_secret: str, lifetime: float):
        super().__init__(_Handler)
        self.client_id, self.client_secret, self.lifetime = client_id, client_secret, lifetime
        self.issued: dict[str, float] = {}
        """token -> when it expires (time.monotonic())."""
        self.grants: list[dict[str, str]] = []
        self.token_url = f"{self.url}/oauth2/token"

    def valid(self, token: str) -> bool:
        return self.issued.get(token, 0.0) > time.monotonic()


class _Handler(QuietHandler):
    server: OidcProvider

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/.well-known/openid-configuration":
            self.reply_json(200, {"issuer": self.server.url, "token_endpoint": self.server.token_url})
        else:
            self.reply_json(404, {"error": "not_found"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        scheme, _, value = (self.headers.get("Authorization") or "").partition(" ")
        user, _, password = base64.b64decode(value).decode().partition(":") if scheme == "Basic" else ("", "", "")
        self.server.grants.append({**form, "client_id": user})
        if form.get("grant_type") != "client_credentials":
            return self.reply_json(400, {"error": "unsupported_grant_type"})
        if (user, password) != (self.server.client_id, self.server.client_secret):
            return self.reply_json(401, {"error": "invalid_client", "error_description": f"bad secret {password}"})
        token = secrets.token_urlsafe(24)
        self.server.issued[token] = time.monotonic() + self.server.lifetime
        self.reply_json(200, {"access_token": token, "token_type": "Bearer", "expires_in": self.server.lifetime})


@contextlib.contextmanager
def oidc_provider(client_id: str, client_secret: str, lifetime: float = 3600) -> Iterator[OidcProvider]:
    with serving(OidcProvider(client_id, client_secret, lifetime)) as server:
        yield server
