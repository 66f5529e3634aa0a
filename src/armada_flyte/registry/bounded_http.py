"""One bounded HTTP request: at most so many bytes (after gzip), finished by a deadline.

A registry is someone else's server. Reading its answer whole before checking its size, inflating
gzip without a limit, or trusting a per-read timeout (a byte every few seconds keeps it alive)
lets a broken or hostile registry hold the connector's memory and time. Here the body is streamed
and decoded chunk by chunk against a byte bound, and a watchdog shuts the socket at the deadline,
however slowly the bytes come.
"""

from __future__ import annotations

import socket
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import httpx


class BodyTooLarge(Exception):
    """The answer is longer than the bound (as sent, or once inflated)."""


class DeadlinePassed(Exception):
    """The answer was not complete by the deadline."""


class UnreadableBody(Exception):
    """The answer's encoding is unknown or its compressed data is corrupt."""


@dataclass(frozen=True)
class Answer:
    """Status, headers and the (decoded, bounded) body of one response."""

    status: int
    headers: httpx.Headers
    body: bytes
    truncated: bool = False


def bounded_get(client: httpx.Client, url: str, **kwargs: Any) -> Answer:
    """`bounded_request` with GET."""
    return bounded_request(client, "GET", url, **kwargs)


def bounded_request(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    limit: int,
    deadline: float,
    headers: Optional[Mapping[str, str]] = None,
    params: Optional[Mapping[str, str]] = None,
    auth: Any = None,
    data: Optional[Mapping[str, str]] = None,
    error_limit: int = 64 * 1024,
) -> Answer:
    """`method` `url` (form `data` for a POST), reading at most `limit` body bytes by `deadline` (`time.monotonic()`).

    A 200 answer over the limit: `BodyTooLarge`. Any other status keeps the first `error_limit`
    bytes (enough for an error message). Past the deadline: `DeadlinePassed`. httpx's own errors
    pass through.
    """
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlinePassed()
    request_headers = {**(headers or {}), "Accept-Encoding": "gzip"}
    with client.stream(
        method, url, headers=request_headers, params=params, auth=auth, data=data, timeout=httpx.Timeout(remaining)
    ) as response:
        watchdog = _Watchdog(response, deadline)
        ok = response.status_code == 200
        try:
            body, truncated = _read(response, limit if ok else min(limit, error_limit), deadline, not ok)
        except httpx.TransportError:
            if watchdog.fired.is_set():
                raise DeadlinePassed() from None
            raise
        finally:
            watchdog.cancel()
        if watchdog.fired.is_set():  # the cut may read as a clean end of a body without a length
            raise DeadlinePassed()
        return Answer(response.status_code, response.headers, body, truncated)


def _read(response: httpx.Response, limit: int, deadline: float, truncate: bool) -> tuple[bytes, bool]:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and len(declared) < 20 and int(declared) > limit and not truncate:
        raise BodyTooLarge()
    decoder = _decoder(response.headers.get("content-encoding", ""))
    body = bytearray()
    for chunk in response.iter_raw():
        if time.monotonic() > deadline:
            raise DeadlinePassed()
        body += _decoded(decoder, chunk, limit + 1 - len(body))
        if len(body) > limit:
            if truncate:
                return bytes(body[:limit]), True
            raise BodyTooLarge()
    if decoder is not None:
        try:
            body += decoder.flush()[: limit + 1 - len(body)]
        except zlib.error as exc:
            raise UnreadableBody(f"its gzip data is corrupt ({exc})") from None
        if len(body) > limit:
            if truncate:
                return bytes(body[:limit]), True
            raise BodyTooLarge()
    return bytes(body), False


def _decoder(encoding: str) -> Any:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise UnreadableBody(f"it sent Content-Encoding {encoding[:40]!r}, which was not asked for")


def _decoded(decoder: Any, chunk: bytes, room: int) -> bytes:
    """`chunk` decoded, at most `room` bytes of it: a gzip bomb stops at the bound, not in memory."""
    if decoder is None:
        return chunk[:room]
    try:
        return decoder.decompress(chunk, max(room, 1))
    except zlib.error as exc:
        raise UnreadableBody(f"its gzip data is corrupt ({exc})") from None


class _Watchdog:
    """Shuts the response's socket at the deadline, which wakes a read blocked on a slow sender."""

    def __init__(self, response: httpx.Response, deadline: float):
        self.fired = threading.Event()
        self._response = response
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired.set()
        stream = self._response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: the read has ended anyway

    def cancel(self) -> None:
        self._timer.cancel()
