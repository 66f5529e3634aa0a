"""The Kubernetes API as the node agent calls it: JSON over HTTPS, one connection per call, and watches.

All of the agent's calls to the API server go through `KubeApi`: it logs in with the kubeconfig's
credential, checks the server's certificate against the kubeconfig's authority, and turns a refusal into
`KubeApiError` with the API server's own status (reason, code, message), so callers act on the reason
and users read the API server's words. The standard library's http.client: no dependency to add.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import urllib.parse
from typing import Any, Iterator, Mapping, Optional

from armada_flyte.node_agent.kubeconfig import ApiServerLogin

MERGE_PATCH = "application/merge-patch+json"


class KubeApiError(Exception):
    """The API server refused a call (or could not be reached: code 0); `message` is its own words."""

    def __init__(self, code: int, reason: str, message: str):
        self.code = code
        self.reason = reason
        self.message = message
        super().__init__(f"{code} {reason}: {message}")


class KubeApi:
    """Calls to one API server as one user. Safe to share between threads: each thread keeps one connection
    alive for its calls (a TLS handshake per call cost more than the call on a busy machine: 200 pods' statuses
    fell behind), and each watch has its own."""

    def __init__(self, login: ApiServerLogin, timeout: float = 30.0):
        self.login = login
        self.timeout = timeout
        parsed = urllib.parse.urlsplit(login.server)
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 443
        self._prefix = parsed.path.rstrip("/")
        self._tls = ssl.create_default_context(cafile=str(login.ca_file) if login.ca_file else None)
        self._watches: set[http.client.HTTPSConnection] = set()
        self._watches_lock = threading.Lock()
        self._watches_ended = False
        self._kept = threading.local()
        if login.client_cert and login.client_key:
            self._tls.load_cert_chain(str(login.client_cert), str(login.client_key))

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._tls)

    def _headers(self, content_type: str = "application/json") -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type, "User-Agent": "armada-flyte-node-agent"}
        if self.login.token:
            headers["Authorization"] = f"Bearer {self.login.token}"
        return headers

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Optional[Mapping[str, str]] = None,
        content_type: str = "application/json",
    ) -> Any:
        """One call; the decoded JSON answer, or KubeApiError."""
        data = self._send(method, path, body, params, self._headers(content_type))
        return json.loads(data) if data else None

    def _send(
        self, method: str, path: str, body: Any, params: Optional[Mapping[str, str]], headers: dict[str, str]
    ) -> bytes:
        """One call on the thread's kept connection; the answer's body, or KubeApiError. A kept connection the
        server has closed meanwhile fails at once: the call is made once more on a new one."""
        payload = None if body is None else json.dumps(body).encode()
        for fresh in (False, True):
            connection, reused = self._thread_connection(fresh)
            try:
                connection.request(method, self._url(path, params), body=payload, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                self._kept.connection = None
                if reused and not fresh:
                    continue
                raise KubeApiError(0, "Unreachable", f"{self.login.server}: {exc}") from None
            if response.will_close:
                connection.close()
                self._kept.connection = None
            if response.status >= 300:
                raise _refusal(response.status, data)
            return data
        raise AssertionError("unreachable")

    def _thread_connection(self, fresh: bool) -> tuple[http.client.HTTPSConnection, bool]:
        """The calling thread's connection (a new one when `fresh` or none is kept), and whether it was kept."""
        kept = getattr(self._kept, "connection", None)
        if kept is not None and not fresh:
            return kept, True
        self._kept.connection = self._connection(self.timeout)
        return self._kept.connection, False

    def get(self, path: str, params: Optional[Mapping[str, str]] = None) -> Any:
        return self.request("GET", path, params=params)

    def create(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def merge_patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body, content_type=MERGE_PATCH)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, body)

    def delete(self, path: str, body: Any = None) -> Any:
        return self.request("DELETE", path, body)

    def text(self, path: str, params: Optional[Mapping[str, str]] = None) -> str:
        """A call whose answer is text (a pod's log)."""
        return self._send("GET", path, None, params, {**self._headers(), "Accept": "*/*"}).decode(errors="replace")

    def watch(self, path: str, params: Mapping[str, str], timeout_seconds: int) -> Iterator[dict[str, Any]]:
        """The events of a watch (`{"type": ..., "object": ...}`), until the server ends it after `timeout_seconds`."""
        query = {**params, "watch": "1", "timeoutSeconds": str(timeout_seconds), "allowWatchBookmarks": "true"}
        connection = self._connection(timeout_seconds + 30)
        with self._watches_lock:
            if self._watches_ended:
                raise KubeApiError(0, "WatchesEnded", "the client's watches were ended")
            self._watches.add(connection)
        try:
            connection.request("GET", self._url(path, query), headers=self._headers())
            response = connection.getresponse()
            if response.status >= 300:
                raise _refusal(response.status, response.read())
            for line in response:
                if line.strip():
                    yield json.loads(line)
        except OSError as exc:
            raise KubeApiError(0, "Unreachable", f"{self.login.server}: {exc}") from None
        finally:
            with self._watches_lock:
                self._watches.discard(connection)
            connection.close()

    def end_watches(self) -> None:
        """End the watches in progress now (their reads return at once) and refuse new ones, so a stopping agent
        need not wait for the API server to end them."""
        with self._watches_lock:
            self._watches_ended = True
            for connection in self._watches:
                if connection.sock is not None:
                    with contextlib.suppress(OSError):
                        connection.sock.shutdown(socket.SHUT_RDWR)

    def _url(self, path: str, params: Optional[Mapping[str, str]]) -> str:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return f"{self._prefix}{path}{query}"


def _refusal(code: int, data: bytes) -> KubeApiError:
    """The API server's Status object as an error (its reason and message), else the raw answer."""
    try:
        status = json.loads(data)
    except ValueError:
        return KubeApiError(code, "", data.decode(errors="replace")[:2000])
    if not isinstance(status, dict):
        return KubeApiError(code, "", str(status)[:2000])
    return KubeApiError(code, str(status.get("reason", "")), str(status.get("message", "")))


def pod_path(namespace: str, name: str = "") -> str:
    base = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods"
    return f"{base}/{urllib.parse.quote(name)}" if name else base
