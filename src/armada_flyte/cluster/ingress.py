"""Jobs' ingresses: the host names Armada gives them, and the ingress controller that routes to them.

Armada turns a job's `ingress` into a Service and an Ingress whose rule hosts read
`<container>-<port>-armada-<job id>-0.<namespace>.` plus the executor's hostname suffix
(`createIngressFromService` in internal/server/submit/conversion/conversions.go; Armada's local
executor config sets the suffix `svc`). Once the pod runs, the executor sends a JobIngressInfoEvent
mapping each container port to its host (`CreateJobIngressInfoEvent`, internal/executor/reporter/event.go).
On a cluster an ingress controller routes those hosts; here a small one does, on 127.0.0.1: it reads
a request's Host header and relays the connection to the pod's port on 127.0.0.1 (process pods
listen on the host's loopback, as hostNetwork pods would).

Its Host allow-list is the jobs' ingress hosts (relayed), its own address and other `*.svc` names
(404: no such ingress; no public DNS name ends in .svc); any other name is refused (421), so a web
page can't reach the pods through a DNS name rebound to 127.0.0.1. With credentials (`armada-flyte
dev --auth`) a request must also carry one in `Authorization` (401 and a Basic challenge otherwise,
before it is told whether the host has a route), as ingress-nginx's basic-auth annotation asks; the
header is taken out before the request reaches the pod, and each connection then carries one
request, so every request is checked. Connections idle longer than the guard's `idle_seconds` are
dropped.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
from http import HTTPStatus
from typing import Any, Optional

from armada_flyte.http_guard import HttpGuard, Refusal, host_name, misdirected, unauthorized

log = logging.getLogger(__name__)

HOSTNAME_SUFFIX = "svc"
"""The executor's `kubernetes.podDefaults.ingress.hostnameSuffix` in Armada's local setup
(_local/executor/config.yaml)."""
_MAX_HEAD = 64 * 1024
_CONNECT_SECONDS = 5.0


def ingress_ports(item: Any, pod: Any) -> list[tuple[str, int]]:
    """(container name, port) of every port the job's ingresses expose: a main container's declared port
    (not one with a hostPort) named in an ingress's `ports`, or every such port when it names none."""
    declared = [(c.name, p.containerPort) for c in pod.containers for p in c.ports if p.hostPort <= 0]
    chosen: dict[int, str] = {}
    for config in item.ingress:
        wanted = set(config.ports)
        for name, port in declared:
            if not wanted or port in wanted:
                chosen.setdefault(port, name)
    return [(name, port) for port, name in chosen.items()]


def ingress_host(container: str, port: int, pod_name: str, namespace: str) -> str:
    return f"{container}-{port}-{pod_name}.{namespace}.{HOSTNAME_SUFFIX}"


class IngressController:
    """Routes HTTP connections by their Host header to pods' ports on 127.0.0.1, past `guard`'s checks."""

    def __init__(self, port: int = 0, guard: HttpGuard = HttpGuard()):
        self._guard = guard
        self._routes: dict[str, int] = {}
        self._lock = threading.Lock()
        controller = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                controller._relay(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", port), Handler, bind_and_activate=False)
        self._server.daemon_threads = True
        self._server.allow_reuse_address = True
        self._server.server_bind()
        self._server.server_activate()
        self.port: int = self._server.server_address[1]
        self._thread: Optional[threading.Thread] = None

    def start(self) -> IngressController:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="ingress", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def add(self, host: str, port: int) -> None:
        with self._lock:
            self._routes[host.lower()] = port

    def remove(self, host: str) -> None:
        with self._lock:
            self._routes.pop(host.lower(), None)

    def _relay(self, client: socket.socket) -> None:
        client.settimeout(self._guard.idle_seconds)
        try:
            head = _read_head(client)
        except OSError:  # idle too long, or gone
            return
        if not head:
            return
        host = host_name(_header(head, b"host"))
        with self._lock:
            port = self._routes.get(host)
        refusal = self._refusal(host, port, head)
        if refusal is not None:
            client.sendall(_response(refusal.status, refusal.message, refusal.challenge))
            return
        assert port is not None
        if self._guard.credentials is not None:
            head = _for_the_pod(head)
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=_CONNECT_SECONDS)
        except OSError as exc:
            client.sendall(_response(502, f"the pod does not answer on port {port}: {exc}"))
            return
        with upstream:
            upstream.settimeout(self._guard.idle_seconds)
            upstream.sendall(head)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()

    def _refusal(self, host: str, port: Optional[int], head: bytes) -> Optional[Refusal]:
        """Why the request is not relayed: a Host that is neither a route, this machine nor a name of jobs'
        ingress hosts (which no public DNS name can be) is misdirected (421); then it needs a credential
        (401), whether or not the route exists; then a host without a route is not found (404)."""
        ours = port is not None or self._guard.host_allowed(host) or host.endswith(f".{HOSTNAME_SUFFIX}")
        if not ours:
            return misdirected(host, self._guard.allowed_hosts)
        if not self._guard.authenticated(_header(head, b"authorization")):
            return unauthorized()
        if port is None:
            return Refusal(404, "Not Found", f"no ingress for host {host!r}")
        return None


def _read_head(client: socket.socket) -> bytes:
    """The request's head (and whatever of its body came with it); empty when the client closed first."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
        chunk = client.recv(65536)
        if not chunk:
            return b""
        head += chunk
    return head


def _header_lines(head: bytes) -> tuple[list[bytes], bytes]:
    """The head's lines (request line first) and the bytes after its blank line."""
    block, _, rest = head.partition(b"\r\n\r\n")
    return block.split(b"\r\n"), rest


def _header(head: bytes, name: bytes) -> str:
    for line in _header_lines(head)[0][1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip().decode(errors="replace")
    return ""


def _for_the_pod(head: bytes) -> bytes:
    """The head without `Authorization` (the server's credentials are not the pod's), closing after this
    request (so the next one comes on a new connection, and is checked); an Upgrade (WebSocket) keeps its
    connection."""
    lines, rest = _header_lines(head)
    upgrade = "upgrade" in _header(head, b"connection").lower()
    dropped = {b"authorization"} if upgrade else {b"authorization", b"connection", b"keep-alive"}
    kept = [lines[0]] + [line for line in lines[1:] if line.partition(b":")[0].strip().lower() not in dropped]
    if not upgrade:
        kept.append(b"Connection: close")
    return b"\r\n".join(kept) + b"\r\n\r\n" + rest


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until `source` ends, then end `sink`'s sending side (a half close, as a proxy passes it on)."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _response(status: int, text: str, challenge: Optional[str] = None) -> bytes:
    body = (text + "\n").encode()
    extra = f"WWW-Authenticate: {challenge}\r\n" if challenge else ""
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
    )
    return head.encode() + body
