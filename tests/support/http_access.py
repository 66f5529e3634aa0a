"""Checking our local HTTP servers' access rules from outside: requests with a chosen Host and Authorization,
an idle client (a slow-loris that connects and sends nothing), and gRPC calls that carry credentials."""

from __future__ import annotations

import base64
import collections
import http.client
import socket
import ssl
import time
import urllib.parse
from typing import Any, Callable, Optional

import grpc


def basic(user: str, password: str) -> str:
    """The `Authorization` value of HTTP Basic (and of Armada's basic auth)."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def request(
    url: str,
    path: str = "/",
    *,
    host: Optional[str] = None,
    authorization: Optional[str] = None,
    context: Optional[ssl.SSLContext] = None,
) -> tuple[int, dict[str, str], str]:
    """GET `path` of the server at `url` (http or https) with these headers: status, headers and body."""
    address = urllib.parse.urlsplit(url)
    if address.scheme == "https":
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            address.hostname, address.port, timeout=30, context=context
        )
    else:
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    headers = {"Host": host} if host is not None else {}
    if authorization is not None:
        headers["Authorization"] = authorization
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        connection.close()


def assert_idle_client_dropped(url: str, idle_seconds: float, served_meanwhile: Callable[[], None]) -> None:
    """A client that connects and sends nothing is disconnected once `idle_seconds` have passed, while
    `served_meanwhile` (another client's request, which asserts its answer) is served."""
    address = urllib.parse.urlsplit(url)
    started = time.monotonic()
    with socket.create_connection((address.hostname, address.port), timeout=idle_seconds + 15) as idle:
        served_meanwhile()
        try:
            received = idle.recv(1)
        except ConnectionResetError:
            received = b""
        except TimeoutError:
            raise AssertionError(f"the idle connection was still open after {idle_seconds + 15} s") from None
    held = time.monotonic() - started
    assert received == b"", f"the server sent {received!r} to a client that sent nothing"
    assert held >= idle_seconds * 0.9, f"dropped after {held:.2f} s, before the idle timeout ({idle_seconds} s)"


class _Details(
    collections.namedtuple(
        "_Details", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")
    ),
    grpc.ClientCallDetails,
):
    pass


class _WithAuthorization(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    def __init__(self, header: str):
        self._header = header

    def _details(self, details: grpc.ClientCallDetails) -> _Details:
        metadata = [*(details.metadata or ()), ("authorization", self._header)]
        return _Details(details.method, details.timeout, metadata, details.credentials, None, None)

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)


def authorized_channel(url: str, header: str) -> grpc.Channel:
    """A plaintext channel to 127.0.0.1 whose every call carries `authorization: header` (ArmadaClient's
    methods take no metadata; grpc's call credentials need TLS)."""
    return grpc.intercept_channel(grpc.insecure_channel(url), _WithAuthorization(header))
