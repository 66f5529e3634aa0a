"""The scaffolding the tests' own HTTP servers share (the hostile registry, the OIDC provider, the
registry token service): a quiet handler with a JSON reply, and a server on a free port of 127.0.0.1
served from a thread for as long as a `with` block lasts."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from typing import Iterator, TypeVar

Server = TypeVar("Server", bound=http.server.HTTPServer)


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """Logs nothing (a test's output stays its own) and replies JSON with `reply_json`."""

    def log_message(self, *args: object) -> None:
        pass

    def reply_json(self, status: int, document: object) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class LocalServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server on a free port of 127.0.0.1 (`port`, `url`)."""

    daemon_threads = True

    def __init__(self, handler: type[http.server.BaseHTTPRequestHandler]):
        super().__init__(("127.0.0.1", 0), handler)
        self.port = self.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def serving(server: Server) -> Iterator[Server]:
    """`server` answering from a thread of its own for the block; shut down and closed after."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
