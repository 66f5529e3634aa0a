"""Which platforms an image supports, read from its registry's HTTP API (OCI distribution spec).

The connector runs where there is usually no Docker daemon, so it asks the registry itself:
the manifest (an index lists its platforms; a single manifest names its platform only in its
config blob), with anonymous, basic or bearer-token access as the registry demands.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import ssl
import time
from typing import Any, Iterable, Mapping, Optional, Union

import httpx

from armada_flyte.errors import (
    ImageNotFound,
    RegistryAuthFailed,
    RegistryError,
    RegistryProtocolError,
    RegistryUnreachable,
    cut,
)
from armada_flyte.registry.bounded_http import Answer, BodyTooLarge, DeadlinePassed, UnreadableBody, bounded_get
from armada_flyte.registry.credentials import RegistryCredentials, credentials_from_docker_config
from armada_flyte.registry.destinations import Resolver, destination_problem, resolve
from armada_flyte.registry.platforms import (
    INDEX_MEDIA_TYPES,
    MANIFEST_MEDIA_TYPES,
    ImagePlatforms,
    Platform,
    index_platforms,
)
from armada_flyte.registry.reference import DIGEST, ImageReference

_SCHEMA1_MEDIA_TYPES = (
    "application/vnd.docker.distribution.manifest.v1+prettyjws",
    "application/vnd.docker.distribution.manifest.v1+json",
)
_ACCEPT = ", ".join((*INDEX_MEDIA_TYPES, *MANIFEST_MEDIA_TYPES))
_CHALLENGE_PARAM = re.compile(r'([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))')
_TOKEN = re.compile(r"[\x21-\x7e]{1,16384}")
"""A token we can send back in an Authorization header: printable ASCII."""
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
"""The distribution spec lets registries refuse manifests over 4 MiB; anything bigger is not one."""
MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""An image config names layers' digests and the build history: kilobytes, rarely more."""
MAX_TOKEN_ANSWER_BYTES = 1024 * 1024
_MAX_DETAIL = 300
"""Characters of a registry's own words quoted in our errors."""

MAX_REDIRECTS = 5
DEFAULT_TIMEOUT_SECONDS = 10.0
"""Bound on one whole lookup (every request it makes), not on each read."""


class RegistryClient:
    """Reads image platforms from registries; reuses connections and tokens across lookups.

    `insecure_hosts` (host or host:port) and loopback registries are spoken to over plain HTTP.
    `credentials` maps a registry (as written in references, e.g. `127.0.0.1:5000`, `docker.io`)
    to its credentials; registries not in it use the Docker config when `use_docker_config`.
    """

    def __init__(
        self,
        *,
        insecure_hosts: Iterable[str] = (),
        credentials: Optional[Mapping[str, RegistryCredentials]] = None,
        use_docker_config: bool = True,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        verify: Union[bool, ssl.SSLContext] = True,
        resolver: Resolver = resolve,
    ):
        self._insecure_hosts = frozenset(insecure_hosts)
        self._resolver = resolver
        """How a destination's host is resolved to judge it (destinations.py); tests give their own."""
        self._credentials = dict(credentials or {})
        self._use_docker_config = use_docker_config
        self._timeout = timeout
        self._http = httpx.Client(timeout=timeout, verify=verify, follow_redirects=False)
        """Redirects are followed by `_send`, each judged first (registry/destinations.py)."""
        self._authorization: dict[tuple[str, str], str] = {}

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def platforms(self, reference: Union[str, ImageReference]) -> ImagePlatforms:
        """The platforms `reference` resolves to, within the client's timeout for the whole lookup.

        Raises only `RegistryError`s: InvalidImageReference, ImageNotFound, RegistryAuthFailed,
        RegistryUnreachable, RegistryProtocolError, whatever the registry sends.
        """
        ref = reference if isinstance(reference, ImageReference) else ImageReference.parse(reference)
        deadline = time.monotonic() + self._timeout
        try:
            return self._platforms(ref, deadline)
        except RegistryError:
            raise
        except (ValueError, TypeError, AttributeError, KeyError, RecursionError, UnicodeError, OverflowError) as exc:
            # a shape of answer the checks below did not foresee: still "could not read", never a crash
            raise RegistryProtocolError(ref.registry, f"unexpected answer for {ref} ({type(exc).__name__})") from exc

    def _platforms(self, ref: ImageReference, deadline: float) -> ImagePlatforms:
        answer = self._get(ref, f"manifests/{ref.manifest_reference}", _ACCEPT, MAX_MANIFEST_BYTES, deadline)
        body = answer.body
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        if ref.digest and ref.digest.startswith("sha256:") and ref.digest.lower() != digest:
            raise RegistryProtocolError(ref.registry, f"the manifest served for {ref} has digest {digest}")
        manifest = _json_object(body, ref.registry, f"manifest of {ref}")
        media_type = _media_type(answer, manifest)

        if media_type in INDEX_MEDIA_TYPES or (not media_type and "manifests" in manifest):
            platforms = index_platforms(_entries(manifest, ref))
        elif media_type in MANIFEST_MEDIA_TYPES or (not media_type and "config" in manifest):
            platforms = self._config_platform(ref, manifest, deadline)
        elif media_type in _SCHEMA1_MEDIA_TYPES:
            architecture = manifest.get("architecture")
            platforms = (Platform("linux", architecture),) if isinstance(architecture, str) and architecture else ()
        else:
            raise RegistryProtocolError(ref.registry, f"{ref} is a {_clip(media_type) or 'document'} with no platforms")
        return ImagePlatforms(reference=str(ref), digest=digest, media_type=media_type, platforms=platforms)

    def _config_platform(self, ref: ImageReference, manifest: dict[str, Any], deadline: float) -> tuple[Platform, ...]:
        """A single manifest names its platform only in its config blob."""
        config = manifest.get("config")
        digest = config.get("digest") if isinstance(config, dict) else None
        if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
            raise RegistryProtocolError(ref.registry, f"the manifest of {ref} has no usable config descriptor")
        answer = self._get(ref, f"blobs/{digest}", "application/json, */*", MAX_CONFIG_BYTES, deadline)
        image_config = _json_object(answer.body, ref.registry, f"config blob of {ref}")
        platform = Platform.from_oci(image_config)
        return () if platform.is_unknown else (platform,)

    def _base_url(self, ref: ImageReference) -> str:
        host = ref.api_host
        hostname = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        plain = ref.is_loopback() or host in self._insecure_hosts or hostname in self._insecure_hosts
        return f"{'http' if plain else 'https'}://{host}/v2/{ref.repository}/"

    def _get(self, ref: ImageReference, path: str, accept: str, limit: int, deadline: float) -> Answer:
        """GET under the repository, authorising on the registry's challenge; errors become typed errors."""
        url = self._base_url(ref) + path
        key = (ref.api_host, ref.repository)
        answer = self._send(ref, url, accept, self._authorization.get(key), limit, deadline)
        if answer.status == 401:
            self._authorization[key] = self._answer_challenge(ref, answer, deadline)
            answer = self._send(ref, url, accept, self._authorization[key], limit, deadline)
            if answer.status == 401:
                self._authorization.pop(key, None)
                raise RegistryAuthFailed(ref.registry, str(ref), self._refusal(ref, answer))
        if answer.status == 403:
            raise RegistryAuthFailed(ref.registry, str(ref), "access denied" + _error_detail(answer, ": "))
        if answer.status == 404:
            raise ImageNotFound(str(ref), _error_detail(answer))
        if answer.status == 429:
            raise RegistryUnreachable(
                ref.registry,
                "it is rate-limiting requests (HTTP 429)",
                hint="Retry later, or log in (`docker login`) to get a higher limit.",
            )
        if answer.status >= 500:
            raise RegistryUnreachable(ref.registry, f"it answered HTTP {answer.status}")
        if answer.status != 200:
            raise RegistryProtocolError(ref.registry, f"HTTP {answer.status} for {url}{_error_detail(answer, ': ')}")
        return answer

    def _send(
        self,
        ref: ImageReference,
        url: str,
        accept: str,
        authorization: Optional[str],
        limit: int,
        deadline: float,
        *,
        params: Optional[Mapping[str, str]] = None,
        auth: Any = None,
        what: str = "it",
    ) -> Answer:
        """One bounded GET, following at most MAX_REDIRECTS redirects the registry may send us to (credentials
        only to its own host); a non-200 answer's body is kept only as far as an error message needs."""
        headers = {"Accept": accept}
        if authorization:
            headers["Authorization"] = authorization
        origin = url
        for _ in range(MAX_REDIRECTS + 1):
            answer = self._send_once(ref, url, headers, limit, deadline, params, auth, what)
            location = answer.headers.get("location") if answer.status in (301, 302, 303, 307, 308) else None
            if location is None:
                return answer
            target = str(httpx.URL(url).join(location))
            problem = destination_problem(self._base_url(ref), target, self._resolver)
            if problem:
                raise RegistryProtocolError(ref.registry, f"its redirect from {_clip(url)} is refused: {problem}")
            if httpx.URL(target).host != httpx.URL(origin).host:
                headers.pop("Authorization", None)  # a CDN's signed URL needs none; our token is not for it
                auth = None
            url, params = target, None
        raise RegistryProtocolError(ref.registry, f"more than {MAX_REDIRECTS} redirects from {_clip(origin)}")

    def _send_once(
        self,
        ref: ImageReference,
        url: str,
        headers: dict[str, str],
        limit: int,
        deadline: float,
        params: Optional[Mapping[str, str]],
        auth: Any,
        what: str,
    ) -> Answer:
        try:
            answer = bounded_get(
                self._http, url, limit=limit, deadline=deadline, headers=headers, params=params, auth=auth
            )
        except DeadlinePassed:
            raise RegistryUnreachable(
                ref.registry, f"{what} did not answer {url} within {self._timeout:g}s (the bound on a whole lookup)"
            ) from None
        except BodyTooLarge:
            raise RegistryProtocolError(
                ref.registry, f"the answer for {url} is larger than {limit // 1024} KiB"
            ) from None
        except UnreadableBody as exc:
            raise RegistryProtocolError(ref.registry, f"{url}: {exc}") from None
        except httpx.TimeoutException:
            raise RegistryUnreachable(ref.registry, f"{what} did not answer {url} within {self._timeout:g}s") from None
        except httpx.TransportError as exc:
            raise _unreachable(ref.registry, url, exc, what=what) from exc
        except (httpx.HTTPError, httpx.InvalidURL, httpx.CookieConflict, UnicodeError, ValueError) as exc:
            # redirect loops, URLs or headers that can't be sent, ...
            raise RegistryProtocolError(ref.registry, f"{_clip(url)}: {_clip(str(exc))}") from None
        return answer

    def _credentials_for(self, ref: ImageReference) -> Optional[RegistryCredentials]:
        if ref.registry in self._credentials:
            return self._credentials[ref.registry]
        if self._use_docker_config:
            return credentials_from_docker_config(ref.registry)
        return None

    def _answer_challenge(self, ref: ImageReference, answer: Answer, deadline: float) -> str:
        """Turn a 401's WWW-Authenticate challenge into an Authorization header value."""
        scheme, params = parse_challenge(answer.headers.get("www-authenticate", ""))
        credentials = self._credentials_for(ref)
        if scheme == "basic":
            if credentials is None:
                raise RegistryAuthFailed(
                    ref.registry, str(ref), "it asks for a user name and password and none were found"
                )
            return basic_authorization(credentials)
        if scheme == "bearer":
            return "Bearer " + self._fetch_token(ref, params, credentials, deadline)
        raise RegistryAuthFailed(
            ref.registry,
            str(ref),
            f"it asks for {_clip(scheme, 40) or 'an unnamed'} authentication, which is not supported",
        )

    def _fetch_token(
        self,
        ref: ImageReference,
        params: Mapping[str, str],
        credentials: Optional[RegistryCredentials],
        deadline: float,
    ) -> str:
        """The token dance: ask the realm for a pull token for this repository (with credentials if we have them)."""
        realm = params.get("realm")
        if not realm or not realm.startswith(("https://", "http://")):
            raise RegistryProtocolError(
                ref.registry, f"its bearer challenge names no usable realm ({_clip(repr(realm))})"
            )
        realm_text = _clip(realm)
        problem = destination_problem(self._base_url(ref), realm, self._resolver)
        if problem:
            raise RegistryProtocolError(ref.registry, f"its token service is refused: {problem}")
        if realm.startswith("http://") and credentials is not None and not self._base_url(ref).startswith("http://"):
            # A registry reached over TLS must not have our password sent in the clear.
            raise RegistryProtocolError(
                ref.registry, f"its token service {realm_text} is plain HTTP; credentials are only sent over HTTPS"
            )
        query = {"scope": params.get("scope") or f"repository:{ref.repository}:pull"}
        if params.get("service"):
            query["service"] = params["service"]
        auth = httpx.BasicAuth(credentials.username, credentials.password) if credentials else None
        answer = self._send(
            ref,
            realm,
            "application/json",
            None,
            MAX_TOKEN_ANSWER_BYTES,
            deadline,
            params=query,
            auth=auth,
            what="its token service",
        )
        if answer.status in (401, 403):
            who = (
                f"the credentials for {credentials.username!r} were refused"
                if credentials
                else "it refused anonymous access"
            )
            raise RegistryAuthFailed(ref.registry, str(ref), f"its token service {realm_text}: {who}")
        if answer.status != 200:
            raise RegistryUnreachable(ref.registry, f"its token service {realm_text} answered HTTP {answer.status}")
        document = _json_object(answer.body, ref.registry, "token service answer")
        token = document.get("token") or document.get("access_token")
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            raise RegistryProtocolError(ref.registry, f"its token service {realm_text} returned no usable token")
        return token

    def _refusal(self, ref: ImageReference, answer: Answer) -> str:
        credentials = self._credentials_for(ref)
        who = (
            f"the credentials for {credentials.username!r} were refused"
            if credentials
            else "it needs credentials and none were found"
        )
        return who + _error_detail(answer, " - ")


def basic_authorization(credentials: RegistryCredentials) -> str:
    """The `Authorization` value for HTTP basic auth."""
    pair = f"{credentials.username}:{credentials.password}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """Split `Bearer realm="...",service="...",scope="..."` into ("bearer", {realm, service, scope})."""
    scheme, _, rest = header.strip().partition(" ")
    params = {}
    for match in _CHALLENGE_PARAM.finditer(rest):
        quoted, bare = match.group(2), match.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        params[match.group(1).lower()] = value
    return scheme.lower(), params


def _media_type(answer: Answer, manifest: Mapping[str, Any]) -> str:
    declared = manifest.get("mediaType")
    if isinstance(declared, str) and declared:
        return declared
    header = answer.headers.get("content-type", "").split(";", 1)[0].strip()
    return "" if header in ("application/json", "text/plain", "") else header


def _entries(index: Mapping[str, Any], ref: ImageReference) -> list[Mapping[str, Any]]:
    entries = index.get("manifests")
    if not isinstance(entries, list):
        raise RegistryProtocolError(ref.registry, f"the index of {ref} has no manifests list")
    return [entry for entry in entries if isinstance(entry, dict)]


def _json_object(body: bytes, registry: str, what: str) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the stack
        raise RegistryProtocolError(
            registry, f"the {what} is not JSON ({_clip(str(exc) or type(exc).__name__)})"
        ) from None
    if not isinstance(document, dict):
        raise RegistryProtocolError(registry, f"the {what} is not a JSON object")
    return document


def _error_detail(answer: Answer, prefix: str = "") -> str:
    """The registry's own error codes and messages, e.g. `MANIFEST_UNKNOWN: manifest unknown`."""
    try:
        document = json.loads(answer.body)
    except (ValueError, RecursionError):
        return ""
    errors = document.get("errors") if isinstance(document, dict) else None
    if not isinstance(errors, list):
        return ""
    parts = []
    for error in errors[:5]:
        if isinstance(error, dict):
            code, message = error.get("code", "?"), error.get("message", "")
            parts.append(f"{code if isinstance(code, str) else '?'}: {message if isinstance(message, str) else ''}")
    text = _clip("; ".join(part.rstrip(": ") for part in parts))
    return prefix + text if text else ""


def _clip(text: str, limit: int = _MAX_DETAIL) -> str:
    """A registry's text, printable and short, for quoting in an error."""
    return cut("".join(c if c.isprintable() else "?" for c in text[: limit + 1]), limit)


def _unreachable(registry: str, url: str, exc: httpx.TransportError, what: str = "it") -> RegistryUnreachable:
    detail = f"{what} did not answer at {_clip(url)} ({type(exc).__name__}: {_clip(str(exc)) or 'no details'})"
    if "SSL" in str(exc) or "certificate" in str(exc).lower():
        return RegistryUnreachable(
            registry,
            detail,
            hint="The TLS handshake failed: if the registry speaks plain HTTP, mark it insecure "
            "(--insecure, or the connector setting registry_insecure_hosts); if it uses a private CA, "
            "trust that CA (SSL_CERT_FILE).",
        )
    return RegistryUnreachable(registry, detail)


def image_platforms(
    reference: Union[str, ImageReference],
    *,
    insecure_hosts: Iterable[str] = (),
    credentials: Optional[Mapping[str, RegistryCredentials]] = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> ImagePlatforms:
    """One-shot lookup: the platforms `reference` supports, read from its registry."""
    with RegistryClient(insecure_hosts=insecure_hosts, credentials=credentials, timeout=timeout) as client:
        return client.platforms(reference)
