"""The kubelet endpoint: where the API server reads a pod's container log (`kubectl logs`, Binoculars).

HTTPS on the address given (127.0.0.1 by default), and only for a client whose certificate the bed's
authority signed for the API server (its `--kubelet-client-certificate`, common name checked): a kubelet's
endpoint answers the API server, never a user directly. The node objects name its port
(`daemonEndpoints.kubeletEndpoint`); one endpoint serves every node of the agent.
"""

from __future__ import annotations

import http.server
import logging
import pathlib
import re
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Optional

from armada_flyte.node_agent.container_logs import BadLogRequest, LogOptions, log_text
from armada_flyte.pod_runner import PodLog

log = logging.getLogger(__name__)

_LOG_PATH = re.compile(r"^/containerLogs/([^/]+)/([^/]+)/([^/]+)$")

LogFinder = Callable[[str, str, str], Optional[PodLog]]
"""(namespace, pod, container) -> the pod's log, or None when the node holds no such pod and container."""


@dataclass(frozen=True)
class EndpointTls:
    """The endpoint's certificate and key, and who may call it: certificates of `client_ca` named `client_names`."""

    cert: pathlib.Path
    key: pathlib.Path
    client_ca: pathlib.Path
    client_names: tuple[str, ...]

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(self.client_ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        context.verify_mode = ssl.CERT_REQUIRED
        return context


class KubeletEndpoint:
    """The endpoint's HTTPS server on its own thread; `port` is the one it got (0 asks for a free one)."""

    def __init__(self, host: str, port: int, tls: EndpointTls, find_log: LogFinder):
        handler = _handler(find_log, tls.client_names)
        self._server = _QuietServer((host, port), handler)
        # The handshake happens in the request's thread: a client that stalls it holds up no one else.
        self._server.socket = tls.context().wrap_socket(
            self._server.socket, server_side=True, do_handshake_on_connect=False
        )
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="kubelet-endpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client refused in the handshake (no certificate, another authority) is logged, not printed."""
        log.info("kubelet endpoint: a connection from %s failed", client_address, exc_info=True)


def _common_name(certificate: dict) -> str:
    for entry in certificate.get("subject", ()):
        for key, value in entry:
            if key == "commonName":
                return value
    return ""


def _handler(find_log: LogFinder, client_names: tuple[str, ...]) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "armada-flyte-node-agent"
        timeout = 60

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
            log.debug("kubelet endpoint: " + format, *args)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
            if not peer or _common_name(peer) not in client_names:
                self._answer(403, b"only the API server may call the kubelet endpoint\n")
                return
            url = urllib.parse.urlsplit(self.path)
            match = _LOG_PATH.match(url.path)
            if match is None:
                self._answer(404, b"not found\n")
                return
            namespace, pod, container = (urllib.parse.unquote(part) for part in match.groups())
            pod_log = find_log(namespace, pod, container)
            if pod_log is None:
                self._answer(404, f"no container {container} of pod {namespace}/{pod} on this node\n".encode())
                return
            try:
                options = LogOptions.from_query(urllib.parse.parse_qs(url.query), time.time_ns() // 1000)
            except BadLogRequest as exc:
                self._answer(400, f"{exc}\n".encode())
                return
            self._answer(200, log_text(pod_log.lines(), options))

        def _answer(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
