"""A TCP forwarder on 127.0.0.1 that can cut its connections: a real network fault between a client
and a server (gRPC sees the connection drop, as it would when a load balancer or a pod goes away).

A socket is closed only by the thread that last uses it: cutting a connection shuts its sockets down (their
pumps see the end and stop), and the second of its pumps to stop closes them; closing the proxy shuts its
listener down and the accepting thread closes it. A descriptor closed while another thread still uses it
may be handed to a new socket of the process (a gRPC server's listener, in the same test process), which
that thread would then shut down, read or write.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Optional


class _Connection:
    """A client's connection and the one made for it upstream, with their two pumps."""

    def __init__(self, client: socket.socket, server: socket.socket, deadline: float):
        self.sockets = (client, server)
        self.deadline = deadline
        self._lock = threading.Lock()
        self._pumps_running = 2
        self._closed = False

    def cut(self) -> None:
        """End both directions: each pump's read or write fails, and it stops."""
        with self._lock:
            if not self._closed:
                for sock in self.sockets:
                    _shut_down(sock)

    def pump_stopped(self) -> None:
        with self._lock:
            self._pumps_running -= 1
            if self._pumps_running:
                return
            self._closed = True
            for sock in self.sockets:
                sock.close()


class FlakyProxy:
    """Forwards 127.0.0.1:`port` (0: a free one) to `upstream`; while flaky, each connection is cut after
    `lifetime` seconds. Until `flaky` is called it is a plain forwarder."""

    def __init__(self, upstream: str, port: int = 0):
        host, upstream_port = upstream.rsplit(":", 1)
        self._upstream = (host, int(upstream_port))
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port = self._listener.getsockname()[1]
        self._lifetime: Optional[float] = None
        self._open: list[_Connection] = []
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
        for connection in doomed:
            connection.cut()

    def close(self) -> None:
        """Stop accepting (the accepting thread closes the listener) and cut every connection."""
        self._closed = True
        _shut_down(self._listener)
        self.heal()

    def _accept(self) -> None:
        try:
            while not self._closed:
                try:
                    client, _ = self._listener.accept()
                except OSError:
                    return
                try:
                    server = socket.create_connection(self._upstream)
                except OSError:  # the upstream is down: the client sees its connection end
                    client.close()
                    continue
                deadline = time.monotonic() + self._lifetime if self._lifetime is not None else float("inf")
                connection = _Connection(client, server, deadline)
                with self._lock:
                    self._open.append(connection)
                for source, sink in ((client, server), (server, client)):
                    threading.Thread(target=_pump, args=(connection, source, sink), daemon=True).start()
        finally:
            self._listener.close()

    def _cut_old(self) -> None:
        while not self._closed:
            now = time.monotonic()
            with self._lock:
                doomed = [c for c in self._open if c.deadline <= now]
                self._open = [c for c in self._open if c.deadline > now]
            for connection in doomed:
                connection.cut()
            time.sleep(0.02)


def _pump(connection: _Connection, source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    connection.cut()  # one direction ended: so does the other
    connection.pump_stopped()


def _shut_down(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # not connected, or the peer went first
        pass
