"""Where a registry may send the connector: its redirects and its token service (realm).

A task author names the image, so the registry is anyone's. Left to follow any redirect or realm, the
connector (inside the cluster) could be sent to the cloud's metadata service or an internal API, and
the answer's words would come back in an error message. So a destination on the registry's own host
is followed as it is; one on another host only over HTTPS, and only to public addresses, unless the
registry itself is private (a company registry with its token service beside it).
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Callable, Iterable, Optional
from urllib.parse import urlsplit

Resolver = Callable[[str], Iterable[str]]


def resolve(host: str) -> list[str]:
    """The addresses `host` resolves to ([] when it does not)."""
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)})
    except (OSError, UnicodeError):
        return []


def destination_problem(registry_url: str, destination: str, resolver: Resolver = resolve) -> Optional[str]:
    """Why the connector must not follow `destination` from the registry at `registry_url`; None when it may."""
    source, target = urlsplit(registry_url), urlsplit(destination)
    if target.scheme not in ("https", "http") or not target.hostname:
        return f"{_shown(destination)} is not an http(s) URL"
    if target.hostname == source.hostname and (target.scheme == "https" or source.scheme == "http"):
        return None  # the registry's own host (any port), over TLS or as plainly as the registry itself
    if target.scheme != "https":
        return f"{_shown(destination)} is plain HTTP on another host than the registry"
    if not _is_public(target.hostname, resolver) and _is_public(source.hostname or "", resolver):
        return f"{_shown(destination)} is a private or local address, and the registry is public"
    return None


def _is_public(host: str, resolver: Resolver) -> bool:
    """Whether every address of `host` is a global one (not loopback, private, link-local, reserved)."""
    try:
        addresses = [host.strip("[]")] if _is_address(host.strip("[]")) else list(resolver(host))
    except (OSError, UnicodeError):
        addresses = []
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_global for a in addresses)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def _shown(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"[:200]
