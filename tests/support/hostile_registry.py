"""A registry of the tests' own on 127.0.0.1 that answers whatever a test scripts: huge bodies,
a slow drip, gzip bombs, malformed JSON, odd headers. It speaks just enough HTTP for that.

`answers` maps a path under /v2/ (e.g. `app/manifests/1`) or the token path to an `Answer`;
anything else is a 404. Bodies may be bytes or an iterator of chunks (sent as they come, with
pauses when a chunk is a number of seconds), so a huge body is never held in memory.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Union

from support.fake_http import LocalServer, QuietHandler, serving

Chunk = Union[bytes, float]
"""Bytes to send, or seconds to pause (a slow drip)."""


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    body: Union[bytes, Iterable[Chunk]] = b"{}"


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.requests.append((self.path, dict(self.headers)))
        path = self.path.split("?", 1)[0]
        answer = self.server.answers.get(path.removeprefix("/v2/")) or Answer(404, body=b'{"errors": []}')
        self.send_response(answer.status)
        headers = dict(answer.headers)
        body = answer.body
        if isinstance(body, bytes):
            headers.setdefault("Content-Length", str(len(body)))
        else:
            headers["Connection"] = "close"  # length unknown: the end of the body is the end of the connection
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for chunk in [body] if isinstance(body, bytes) else body:
                if isinstance(chunk, (int, float)):
                    time.sleep(chunk)
                else:
                    self.wfile.write(chunk)
                    self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: that is what a bounded client does
        if not isinstance(body, bytes):
            self.close_connection = True


class _Server(LocalServer):
    answers: dict[str, Answer]
    requests: list

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hangs up mid-answer is the point, not a server fault


@contextlib.contextmanager
def hostile_registry() -> Iterator[_Server]:
    """The running server (`.answers` to script it, `.host` as `127.0.0.1:port`)."""
    server = _Server(_Handler)
    server.answers = {}
    server.requests = []
    server.host = f"127.0.0.1:{server.port}"  # type: ignore[attr-defined]
    with serving(server):
        yield server


def repeated(chunk: bytes, total: int) -> Iterator[bytes]:
    """`total` bytes made of `chunk`, generated as they are sent."""
    sent = 0
    while sent < total:
        piece = chunk[: total - sent]
        sent += len(piece)
        yield piece


def drip(data: bytes, every: float) -> Iterator[Chunk]:
    """One byte of `data`, then a pause of `every` seconds, and so on."""
    for byte in data:
        yield bytes([byte])
        yield every
