"""Where the connector's Armada credentials come from: a static token or password (or a password file), an
OIDC client-credentials grant, or a command that prints a token (armadactl's `execAuth`).

Each source hands out the `authorization` header value. Tokens that expire are fetched again
before they do (and at once after Armada answers UNAUTHENTICATED), so a long-running `c0` keeps
working. Failures are `ArmadaAuthError`s that name the setting to check and never the secret.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import threading
import time
from typing import Optional, Protocol

import httpx

from armada_flyte.authorization import basic_header, bearer_header, read_secret_file
from armada_flyte.connector.config.settings_groups import ArmadaConnection
from armada_flyte.errors import ArmadaAuthError, InvalidConfig
from armada_flyte.registry.bounded_http import BodyTooLarge, DeadlinePassed, UnreadableBody, bounded_request

_TOKEN = re.compile(r"[\x21-\x7e]{1,16384}")
"""What a bearer token may hold to travel in gRPC metadata: printable ASCII, no spaces."""
_MAX_ANSWER_BYTES = 256 * 1024
_REFRESH_MARGIN_SECONDS = 60.0
"""Refresh this long before a token expires (or half its lifetime, for short-lived tokens)."""
_DEFAULT_LIFETIME_SECONDS = 300.0
"""Assumed lifetime when the token endpoint does not say (`expires_in` is optional in OAuth2)."""


class CredentialSource(Protocol):
    def cached(self) -> Optional[str]:
        """The header value if it is known and fresh ("" for no credentials), without blocking; else None."""

    def header(self) -> str:
        """The header value ("" for no credentials), fetching a new token if needed (blocking)."""

    def invalidate(self) -> bool:
        """Forget a cached token; True when a new one may differ (worth retrying a refused call)."""


class StaticCredentials:
    """`auth_token` or `auth_username`/`auth_password` (or nothing)."""

    def __init__(self, value: str):
        self._value = value

    def cached(self) -> Optional[str]:
        return self._value

    def header(self) -> str:
        return self._value

    def invalidate(self) -> bool:
        return False


class PasswordFileCredentials:
    """`auth_username` with `auth_password_file`: the file is read at start, and again after Armada refuses
    the password, so a rotated Secret is picked up without a restart."""

    def __init__(self, username: str, path: pathlib.Path):
        self._username, self._path = username, path
        self._value = self._read()

    def cached(self) -> Optional[str]:
        return self._value

    def header(self) -> str:
        return self._value

    def invalidate(self) -> bool:
        previous = self._value
        try:
            self._value = self._read()
        except ArmadaAuthError:
            return False
        return self._value != previous

    def _read(self) -> str:
        try:
            return basic_header(self._username, read_secret_file(self._path, "auth_password_file"))
        except InvalidConfig as exc:
            raise ArmadaAuthError(f"{exc} (ARMADA_FLYTE_AUTH_PASSWORD_FILE)") from None


class _Expiring:
    """A token cached until shortly before it expires; one refresh at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._token: Optional[str] = None
        self._refresh_at = 0.0

    def cached(self) -> Optional[str]:
        token = self._token
        return bearer_header(token) if token is not None and time.monotonic() < self._refresh_at else None

    def header(self) -> str:
        with self._lock:
            if (fresh := self.cached()) is not None:
                return fresh
            token, lifetime = self._fetch()
            margin = min(_REFRESH_MARGIN_SECONDS, lifetime / 2)
            self._token, self._refresh_at = token, time.monotonic() + max(0.0, lifetime - margin)
            return bearer_header(token)

    def invalidate(self) -> bool:
        self._refresh_at = 0.0
        return True

    def _fetch(self) -> tuple[str, float]:
        raise NotImplementedError


class ClientCredentials(_Expiring):
    """OAuth2 client-credentials grant (RFC 6749 4.4), as armadactl's `openIdClientCredentialsAuth`.

    The client authenticates with HTTP Basic (RFC 6749 2.3.1); the secret is read from the setting
    or re-read from its file at each refresh, so a rotated Kubernetes Secret is picked up.
    """

    def __init__(self, settings: ArmadaConnection):
        super().__init__()
        self._settings = settings
        self._token_url = settings.oidc_token_url
        self._timeout = settings.grpc_timeout_seconds

    def _fetch(self) -> tuple[str, float]:
        s = self._settings
        url = self._token_url or self._discover()
        data = {"grant_type": "client_credentials"}
        if s.oidc_scopes:
            data["scope"] = " ".join(s.oidc_scopes)
        auth = httpx.BasicAuth(s.oidc_client_id or "", self._secret())
        answer = self._request("POST", url, data=data, auth=auth)
        if answer.status != 200:
            raise ArmadaAuthError(
                f"the token endpoint {url} refused the client-credentials grant for client "
                f"{s.oidc_client_id!r} (HTTP {answer.status}{_oauth_error(answer.body)}). Check "
                "ARMADA_FLYTE_OIDC_CLIENT_ID and the client secret (ARMADA_FLYTE_OIDC_CLIENT_SECRET or "
                "ARMADA_FLYTE_OIDC_CLIENT_SECRET_FILE)."
            )
        document = _json_object(answer.body)
        token = document.get("access_token")
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            raise ArmadaAuthError(f"the token endpoint {url} answered without a usable access_token")
        lifetime = document.get("expires_in", _DEFAULT_LIFETIME_SECONDS)
        if isinstance(lifetime, str) and lifetime.isdigit():
            lifetime = int(lifetime)
        if isinstance(lifetime, bool) or not isinstance(lifetime, (int, float)) or not 0 < lifetime < 10**9:
            lifetime = _DEFAULT_LIFETIME_SECONDS
        return token, float(lifetime)

    def _discover(self) -> str:
        """The token endpoint named by the issuer's OIDC discovery document."""
        issuer = (self._settings.oidc_provider_url or "").rstrip("/")
        answer = self._request("GET", f"{issuer}/.well-known/openid-configuration")
        endpoint = _json_object(answer.body).get("token_endpoint") if answer.status == 200 else None
        if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
            raise ArmadaAuthError(
                f"the OIDC provider {issuer} (ARMADA_FLYTE_OIDC_PROVIDER_URL) gave no token_endpoint in its "
                "discovery document; check the URL, or set ARMADA_FLYTE_OIDC_TOKEN_URL instead"
            )
        if endpoint.startswith("http://") and issuer.startswith("https://"):
            raise ArmadaAuthError(f"the OIDC provider {issuer} names a plain-HTTP token endpoint; refusing it")
        self._token_url = endpoint
        return endpoint

    def _secret(self) -> str:
        s = self._settings
        if s.oidc_client_secret is not None:
            return s.oidc_client_secret.get_secret_value()
        path = s.oidc_client_secret_file
        try:
            return path.read_text().strip() if path is not None else ""
        except (OSError, UnicodeDecodeError) as exc:
            raise ArmadaAuthError(
                f"the client secret file {path} (ARMADA_FLYTE_OIDC_CLIENT_SECRET_FILE) could not be read: "
                f"{type(exc).__name__}"
            ) from None

    def _request(self, method: str, url: str, **kwargs: object) -> object:
        with httpx.Client(timeout=self._timeout) as client:
            try:
                return bounded_request(
                    client,
                    method,
                    url,
                    limit=_MAX_ANSWER_BYTES,
                    deadline=time.monotonic() + self._timeout,
                    headers={"Accept": "application/json"},
                    **kwargs,
                )
            except (DeadlinePassed, httpx.TimeoutException):
                problem = f"no answer within {self._timeout:g}s"
            except BodyTooLarge:
                problem = "its answer is too large to be a token"
            except (UnreadableBody, httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
                problem = type(exc).__name__
        raise ArmadaAuthError(
            f"could not get an Armada token from {url}: {problem}. Check that the identity provider is reachable "
            "from the connector (ARMADA_FLYTE_OIDC_TOKEN_URL / ARMADA_FLYTE_OIDC_PROVIDER_URL)."
        )


class ExecCredentials(_Expiring):
    """A command that prints a token on stdout, as armadactl's `execAuth` (`cmd`, `args`).

    armadactl runs it for every call; the connector polls constantly, so the token is reused for
    `auth_exec_cache_seconds` (and fetched again at once when Armada refuses it).
    """

    def __init__(self, settings: ArmadaConnection):
        super().__init__()
        self._command = [settings.auth_exec_cmd or "", *settings.auth_exec_args]
        self._lifetime = settings.auth_exec_cache_seconds
        self._timeout = settings.grpc_timeout_seconds

    def cached(self) -> Optional[str]:
        return super().cached() if self._lifetime > 0 else None

    def _fetch(self) -> tuple[str, float]:
        name = self._command[0]
        try:
            done = subprocess.run(self._command, capture_output=True, timeout=self._timeout, stdin=subprocess.DEVNULL)
        except (OSError, ValueError) as exc:
            raise ArmadaAuthError(
                f"the token command {name!r} (ARMADA_FLYTE_AUTH_EXEC_CMD) could not be run: {exc}"
            ) from None
        except subprocess.TimeoutExpired:
            raise ArmadaAuthError(
                f"the token command {name!r} (ARMADA_FLYTE_AUTH_EXEC_CMD) did not finish within {self._timeout:g}s"
            ) from None
        if done.returncode != 0:
            last = (done.stderr or b"").decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise ArmadaAuthError(
                f"the token command {name!r} (ARMADA_FLYTE_AUTH_EXEC_CMD) exited {done.returncode}"
                + (f": {last[0][:300]}" if last[0] else "")
            )
        token = (done.stdout or b"").decode(errors="replace").strip()
        if not _TOKEN.fullmatch(token):
            raise ArmadaAuthError(
                f"the token command {name!r} (ARMADA_FLYTE_AUTH_EXEC_CMD) printed no usable token "
                "(one line of printable ASCII is expected on stdout)"
            )
        return token, self._lifetime


def credentials_for(settings: ArmadaConnection) -> CredentialSource:
    """The source the connection settings configure (exactly one is allowed, checked with the settings)."""
    if settings.oidc_client_id is not None:
        return ClientCredentials(settings)
    if settings.auth_exec_cmd is not None:
        return ExecCredentials(settings)
    if settings.auth_token is not None:
        return StaticCredentials(bearer_header(settings.auth_token.get_secret_value()))
    if settings.auth_username is not None and settings.auth_password_file is not None:
        return PasswordFileCredentials(settings.auth_username, settings.auth_password_file)
    if settings.auth_username is not None and settings.auth_password is not None:
        return StaticCredentials(basic_header(settings.auth_username, settings.auth_password.get_secret_value()))
    return StaticCredentials("")


def _json_object(body: bytes) -> dict:
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    return document if isinstance(document, dict) else {}


def _oauth_error(body: bytes) -> str:
    """The OAuth2 `error` code (RFC 6749 5.2), e.g. `invalid_client`; its description may echo input."""
    code = _json_object(body).get("error")
    return f", {code[:60]}" if isinstance(code, str) and code.isprintable() else ""
