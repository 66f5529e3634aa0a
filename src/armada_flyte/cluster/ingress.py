"""Jobs' ingresses: the host names Armada gives them, and the ingress controller that routes to them.

Armada turns a job's `ingress` into a Service and an Ingress whose rule hosts read
`<container>-<port>-armada-<job id>-0.<namespace>.` plus the executor's hostname suffix
(`createIngressFromService` in internal/server/submit/conversion/conversions.go; Armada's local
executor config sets the suffix `svc`). Once the pod runs, the executor sends a JobIngressInfoEvent
mapping each container port to its host (`CreateJobIngressInfoEvent`, internal/executor/reporter/event.go).
On a cluster an ingress controller routes those hosts; here a small one does, on 127.0.0.1: it reads
a request's Host header and relays the connection to the pod's port on 127.0.0.1 (process pods
listen on the host's loopback, as hostNetwork pods would).
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
from typing import Any, Optional

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
    """Routes HTTP connections by their Host header to pods' ports on 127.0.0.1."""

    def __init__(self, port: int = 0):
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
        head = b""
        while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
            chunk = client.recv(65536)
            if not chunk:
                return
            head += chunk
        host = _host_of(head)
        with self._lock:
            port = self._routes.get(host)
        if port is None:
            client.sendall(_response(404, f"no ingress for host {host!r}"))
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=_CONNECT_SECONDS)
        except OSError as exc:
            client.sendall(_response(502, f"the pod does not answer on port {port}: {exc}"))
            return
        with upstream:
            upstream.settimeout(None)
            upstream.sendall(head)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()


def _host_of(head: bytes) -> str:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"host":
            host = value.strip().decode(errors="replace").lower()
            return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return ""


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


def _response(status: int, text: str) -> bytes:
    reason = {404: "Not Found", 502: "Bad Gateway"}[status]
    body = (text + "\n").encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body
