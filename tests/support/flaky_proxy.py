"""A TCP forwarder on 127.0.0.1 that can cut its connections: a real network fault between a client
and a server (gRPC sees the connection drop, as it would when a load balancer or a pod goes away)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Optional


class FlakyProxy:
    """Forwards 127.0.0.1:`port` (0: a free one) to `upstream`; while flaky, each connection is cut after
    `lifetime` seconds. Until `flaky` is called it is a plain forwarder."""

    def __init__(self, upstream: str, port: int = 0):
        host, upstream_port = upstream.rsplit(":", 1)
        self._upstream = (host, int(upstream_port))
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port = self._listener.getsockname()[1]
        self._lifetime: Optional[float] = None
        self._open: list[tuple[socket.socket, socket.socket, float]] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()
        threading.Thread(target=self._cut_old, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def flaky(self, lifetime: float) -> None:
        self._lifetime = lifetime

    def heal(self) -> None:
        """Connections from now on last; the ones opened while flaky are cut at once."""
        self._lifetime = None
        with self._lock:
            doomed, self._open = self._open, []
        for pair in doomed:
            _close(pair[0], pair[1])

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        self.heal()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._upstream)
            deadline = time.monotonic() + self._lifetime if self._lifetime is not None else float("inf")
            with self._lock:
                self._open.append((client, server, deadline))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def _cut_old(self) -> None:
        while not self._closed:
            now = time.monotonic()
            with self._lock:
                doomed = [pair for pair in self._open if pair[2] <= now]
                self._open = [pair for pair in self._open if pair[2] > now]
            for pair in doomed:
                _close(pair[0], pair[1])
            time.sleep(0.02)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    _close(source, sink)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
