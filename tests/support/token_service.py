"""A small token service for docker-registry's `auth: token` mode, run in the test process.

It checks a user name and password, then signs a JWT (RS256, with its certificate in the
`x5c` header) that grants the scope asked for; the registry trusts the certificate through
its `rootcertbundle`. This is the Docker token protocol Docker Hub, GHCR and Harbor speak.
"""

from __future__ import annotations

import base64
import datetime
import json
import pathlib
import secrets
import time
import urllib.parse
from typing import Optional

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from support.fake_http import LocalServer, QuietHandler, serving

SERVICE = "armada-flyte-test-registry"
ISSUER = "armada-flyte-test-token-issuer"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class TokenSigner:
    """A self-signed key pair whose certificate the registry is told to trust."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        now = datetime.datetime.now(datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "armada-flyte test token signer")])
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )

    def write_bundle(self, path: pathlib.Path) -> pathlib.Path:
        path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        return path

    def token(self, subject: str, scopes: list[str], lifetime_seconds: int = 300) -> str:
        """A signed JWT granting each `repository:NAME:ACTIONS` scope."""
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append({"type": kind, "name": name, "actions": [a for a in actions.split(",") if a]})
        now = int(time.time())
        header = {
            "alg": "RS256",
            "typ": "JWT",
            "x5c": [base64.b64encode(self.certificate.public_bytes(serialization.Encoding.DER)).decode("ascii")],
        }
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": SERVICE,
            "exp": now + lifetime_seconds,
            "nbf": now - 30,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = self.key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64url(signature)}"


class TokenService:
    """Serves `GET /token?service=...&scope=...` on 127.0.0.1 for one user; records what it was asked."""

    def __init__(self, signer: TokenSigner, username: str, password: str):
        self.signer = signer
        self.username = username
        self.password = password
        self.requests: list[dict[str, object]] = []
        service = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                service._answer(self)

        self._server = LocalServer(Handler)
        self._serving = serving(self._server)

    @property
    def realm(self) -> str:
        return f"{self._server.url}/token"

    def start(self) -> TokenService:
        self._serving.__enter__()
        return self

    def stop(self) -> None:
        self._serving.__exit__(None, None, None)

    def _answer(self, handler: QuietHandler) -> None:
        url = urllib.parse.urlsplit(handler.path)
        query = urllib.parse.parse_qs(url.query)
        user = self._basic_user(handler.headers.get("Authorization"))
        self.requests.append({"path": url.path, "query": query, "user": user})
        if url.path != "/token" or query.get("service") != [SERVICE]:
            handler.reply_json(400, {"errors": [{"code": "UNSUPPORTED", "message": "unknown service"}]})
            return
        if user is None:
            handler.reply_json(401, {"errors": [{"code": "UNAUTHORIZED", "message": "bad or missing credentials"}]})
            return
        token = self.signer.token(user, query.get("scope", []))
        handler.reply_json(200, {"token": token, "expires_in": 300})

    def _basic_user(self, header: Optional[str]) -> Optional[str]:
        if not header or not header.lower().startswith("basic "):
            return None
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        return user if (user, password) == (self.username, self.password) else None
