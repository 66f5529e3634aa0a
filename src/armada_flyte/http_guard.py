"""What every local HTTP server of ours checks before it answers: the Host header, then credentials.

The servers listen on 127.0.0.1, but a web page a developer visits can still reach them through a
DNS name its owner rebinds to 127.0.0.1 (DNS rebinding): the browser then sends that name as the
Host. So a request is answered only when its Host names this machine (127.0.0.1 or any loopback
address, `localhost` or a `*.localhost` name, with any port, so an `ssh -L` forward works) or a name
the user allowed; otherwise it is misdirected (421). With credentials, it must then carry one in
`Authorization` (401 otherwise). Connections idle longer than `idle_seconds` are dropped, so a client
that connects and sends nothing can't hold a server thread forever.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable, Optional

from armada_flyte.addresses import is_loopback
from armada_flyte.server_credentials import Credentials

IDLE_SECONDS = 60.0
"""How long a connection may send or read nothing before it is dropped (nginx's client_header_timeout
and proxy_read_timeout). A `kubectl logs -f` that receives nothing for this long is not dropped: the
timeout bounds each read or write, and the server writes to it."""
REALM = "armada-flyte"
"""The realm of the Basic challenge a browser shows in its login prompt."""


@dataclass(frozen=True)
class Refusal:
    """Why a request is not answered: its HTTP status, reason phrase and a message for the client."""

    status: int
    reason: str
    message: str

    @property
    def challenge(self) -> Optional[str]:
        """The `WWW-Authenticate` value to send with it (a 401 asks for Basic credentials)."""
        return f'Basic realm="{REALM}", charset="UTF-8"' if self.status == 401 else None


@dataclass(frozen=True)
class HttpGuard:
    """Who a local HTTP server answers: `credentials` (None: no auth) and the extra Host names allowed."""

    credentials: Optional[Credentials] = None
    allowed_hosts: frozenset[str] = frozenset()
    idle_seconds: float = IDLE_SECONDS

    @classmethod
    def of(
        cls, credentials: Optional[Credentials], allowed_hosts: Iterable[str] = (), idle_seconds: float = IDLE_SECONDS
    ) -> HttpGuard:
        return cls(credentials, frozenset(name.strip().lower() for name in allowed_hosts), idle_seconds)

    def host_allowed(self, host: Optional[str]) -> bool:
        """Whether a request's Host header names this machine or an allowed name."""
        name = host_name(host or "")
        return bool(name) and (is_loopback(name) or name.endswith(".localhost") or name in self.allowed_hosts)

    def authenticated(self, authorization: Optional[str]) -> bool:
        """Whether the `Authorization` header carries an accepted credential (always, without credentials)."""
        if self.credentials is None:
            return True
        return self.credentials.user_of(authorization or "", token_as_password=True) is not None

    def refusal(self, host: Optional[str], authorization: Optional[str]) -> Optional[Refusal]:
        """Why a request with these headers is refused, or None to answer it. The Host comes first, so a
        rebound page gets no login prompt."""
        if not self.host_allowed(host):
            return misdirected(host, self.allowed_hosts)
        if not self.authenticated(authorization):
            return unauthorized()
        return None


def unauthorized() -> Refusal:
    return Refusal(401, "Unauthorized", "Unauthorized: send one of the credentials armada-flyte dev was given")


def misdirected(host: Optional[str], allowed: Iterable[str] = ()) -> Refusal:
    extra = "".join(f", {name}" for name in sorted(allowed))
    return Refusal(
        421,
        "Misdirected Request",
        f"this server answers requests for 127.0.0.1, localhost{extra} only, not Host {(host or '')[:100]!r} "
        "(a DNS name pointed at this machine by a web page is refused); to use another name, allow it "
        "with --allow-host NAME",
    )


def host_name(host: str) -> str:
    """The name of a Host header (`name`, `name:port`, `[v6]:port`), lowercased, without its port."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return (host.rsplit(":", 1)[0] if host.count(":") == 1 else host).rstrip(".")


class GuardedHttpServer(ThreadingHTTPServer):
    """The standard library's threaded server, holding the guard its `GuardedRequestHandler`s check; with
    `tls`, each connection's handshake runs in its own thread (within the idle timeout), not in the one
    that accepts connections."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Any, guard: HttpGuard, tls: Optional[ssl.SSLContext] = None):
        self.guard = guard
        self.tls = tls
        super().__init__(address, handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(self.guard.idle_seconds)
        try:
            secured = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ValueError):  # a failed or idle handshake: nothing to answer
            return
        with secured:
            super().finish_request(secured, client_address)


class GuardedRequestHandler(BaseHTTPRequestHandler):
    """A request handler that drops idle connections and answers a request only when its server's guard
    lets it through (for every method: the check runs as the request is parsed). Subclasses may render
    a refusal their own way (`send_refusal`)."""

    server: GuardedHttpServer

    def setup(self) -> None:
        self.timeout = self.server.guard.idle_seconds  # read by StreamRequestHandler.setup
        super().setup()

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        refusal = self.server.guard.refusal(self.headers.get("Host"), self.headers.get("Authorization"))
        if refusal is None:
            return True
        self.close_connection = True  # its body, if any, is not read: the connection can't carry another
        self.send_refusal(refusal)
        return False

    def send_refusal(self, refusal: Refusal) -> None:
        body = (refusal.message + "\n").encode()
        self.send_response(refusal.status, refusal.reason)
        if refusal.challenge:
            self.send_header("WWW-Authenticate", refusal.challenge)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
