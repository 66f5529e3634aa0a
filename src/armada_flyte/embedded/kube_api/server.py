"""A small read-only Kubernetes API for the embedded cluster, over plain HTTP on 127.0.0.1.

Enough of the core v1 API for client-go and kubectl to find nodes, namespaces, pods and
services: `/version`, the discovery documents (`/api`, `/api/v1`, `/apis`), and list and get of
those four resources, with `labelSelector` and `fieldSelector` (metadata.name, metadata.namespace)
as the API server reads them; and a pod's log (`kubectl logs [-f] POD`, `pod_logs.py`).
Answers are JSON (as Tables when kubectl asks for them, to print);
errors are `Status` objects with Kubernetes' codes and reasons. Everything else is refused:
writes and watches (405: this cluster is changed only through Armada), other resources (404).
It listens on 127.0.0.1 only. Every request first passes an `HttpGuard`: a Host that doesn't name
this machine is refused (421: DNS rebinding), and with the server's credentials (`armada-flyte dev
--auth`) a request must carry one, bearer or basic, as the API server checks them (401 and a Status
`Unauthorized` otherwise); then it serves HTTPS (`serving_cert.py`: client-go sends credentials only
over TLS), and the kubeconfig the server writes carries one credential and the certificate.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable, Optional

from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.kube_api import cluster_objects
from armada_flyte.embedded.kube_api.label_selector import BadSelector, matches, parse_selector
from armada_flyte.embedded.kube_api.pod_logs import BadLogRequest, LogRequest, container_names
from armada_flyte.embedded.kube_api.tables import table, wants_table
from armada_flyte.errors import InvalidConfig
from armada_flyte.http_guard import GuardedHttpServer, GuardedRequestHandler, HttpGuard, Refusal

HOST = "127.0.0.1"
_RESOURCES = {
    # name: (kind, namespaced, short names)
    "namespaces": ("Namespace", False, ["ns"]),
    "nodes": ("Node", False, ["no"]),
    "pods": ("Pod", True, ["po"]),
    "services": ("Service", True, ["svc"]),
}
_FIELDS = ("metadata.name", "metadata.namespace")
FOLLOW_SECONDS = 0.2
"""How often `kubectl logs -f` is sent the lines that arrived."""


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: Optional[dict[str, str]] = None):
        super().__init__(message)
        self.code, self.reason, self.details = code, reason, details


class KubeApi:
    """The objects the API serves, read from the control plane at each request."""

    def __init__(self, plane: ControlPlane):
        self._plane = plane

    def objects(self, resource: str) -> list[dict[str, Any]]:
        cluster = self._plane.cluster
        if resource == "nodes":
            return cluster_objects.nodes(cluster)
        if resource == "namespaces":
            return cluster_objects.namespaces(cluster)
        pods = cluster_objects.live_pods(self._plane.queries.all_jobs(), time.time())
        if resource == "pods":
            return [cluster_objects.pod_object(job, run) for job, run in pods]
        return [service for job, run in pods for service in cluster_objects.service_objects(job, run)]

    def pod_log(self, namespace: str, name: str, query: dict[str, str]) -> tuple[LogRequest, Any]:
        """What `GET .../namespaces/NS/pods/NAME/log` asks for, and the pod's run (its `log`, whether it ended)."""
        for job, run in cluster_objects.live_pods(self._plane.queries.all_jobs(), time.time()):
            if run.pod_name == name and job.namespace == namespace:
                pod = cluster_objects.pod_object(job, run)
                try:
                    return LogRequest.of(query, name, container_names(pod)), run
                except BadLogRequest as exc:
                    raise ApiError(400, "BadRequest", str(exc)) from None
        raise ApiError(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})

    def answer(self, path: str, query: dict[str, str], accept: str = "") -> dict[str, Any]:
        """The JSON answer to GET `path` (a Table when `accept` asks for one, as kubectl does to print);
        raises ApiError with Kubernetes' status otherwise."""
        parts = [p for p in path.split("/") if p]
        if query.get("watch") in ("true", "1"):
            raise ApiError(405, "MethodNotAllowed", "the embedded cluster's read-only API does not serve watches")
        fixed = _DISCOVERY.get(tuple(parts))
        if fixed is not None:
            return fixed()
        if parts[:2] != ["api", "v1"]:
            raise _not_found_path()
        rest = parts[2:]
        namespace: Optional[str] = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] not in _RESOURCES or len(rest) > 2:
            raise _not_found_path()
        resource, name = rest[0], (rest[1] if len(rest) == 2 else None)
        kind, namespaced, _ = _RESOURCES[resource]
        if namespace is not None and not namespaced:
            raise _not_found_path()
        items = [o for o in self.objects(resource) if namespace is None or o["metadata"].get("namespace") == namespace]
        if name is not None:
            if namespaced and namespace is None:
                raise _not_found_path()
            found = next((o for o in items if o["metadata"]["name"] == name), None)
            if found is None:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found', {"name": name, "kind": resource})
            return table(resource, [found]) if wants_table(accept) else found
        items = _selected(items, query)
        if wants_table(accept):
            return table(resource, items)
        return {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}


def _selected(items: list[dict[str, Any]], query: dict[str, str]) -> list[dict[str, Any]]:
    try:
        labels = parse_selector(query.get("labelSelector", ""))
    except BadSelector as exc:
        raise ApiError(400, "BadRequest", str(exc)) from None
    fields = {}
    for part in filter(None, query.get("fieldSelector", "").split(",")):
        key, equals, value = part.replace("==", "=").partition("=")
        if not equals or key.strip() not in _FIELDS:
            raise ApiError(400, "BadRequest", f'field label not supported: "{key.strip()}"')
        fields[key.strip()] = value.strip()
    return [
        item
        for item in items
        if matches(labels, item["metadata"].get("labels", {}))
        and all(item["metadata"].get(key.split(".")[1], "") == value for key, value in fields.items())
    ]


def _not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def _resource_list() -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "v1",
        "resources": [
            {
                "name": name,
                "singularName": kind.lower(),
                "namespaced": namespaced,
                "kind": kind,
                "verbs": ["get", "list"],
                "shortNames": short,
            }
            for name, (kind, namespaced, short) in _RESOURCES.items()
        ]
        + [{"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]}],
    }


_DISCOVERY: dict[tuple[str, ...], Callable[[], dict[str, Any]]] = {
    ("version",): lambda: dict(cluster_objects.KUBERNETES_VERSION),
    ("api",): lambda: {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": HOST}],
    },
    ("apis",): lambda: {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    ("api", "v1"): _resource_list,
}


class _Handler(GuardedRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def send_refusal(self, refusal: Refusal) -> None:
        """As the API server refuses: a Status (`Unauthorized` for missing or wrong credentials)."""
        reason = refusal.reason if refusal.status == 401 else ""  # 421 has no StatusReason of its own
        message = "Unauthorized" if refusal.status == 401 else refusal.message
        self._send(refusal.status, _status(ApiError(refusal.status, reason, message)), close=True)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        if len(parts) == 7 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods" and parts[6] == "log":
            try:
                request, run = self.server.api.pod_log(parts[3], parts[5], query)
            except ApiError as exc:
                self._send(exc.code, _status(exc))
                return
            self._send_log(request, run)
            return
        try:
            self._send(200, self.server.api.answer(url.path, query, self.headers.get("Accept", "")))
        except ApiError as exc:
            self._send(exc.code, _status(exc))

    def _send_log(self, request: LogRequest, run: Any) -> None:
        """The log as text; with `follow`, new lines as they come until the pod ends (then the connection closes)."""
        every = run.log.lines()
        lines = request.first(every)
        if not request.follow:
            data = request.text(lines).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        seen = len(every)
        self.wfile.write(request.text(lines).encode())
        while True:
            ended = run.finished_at is not None
            every = run.log.lines()
            if len(every) > seen:
                self.wfile.write(request.text(every[seen:]).encode())
                self.wfile.flush()
                seen = len(every)
            if ended:
                return
            time.sleep(FOLLOW_SECONDS)

    def _refuse(self) -> None:
        self._send(
            405, _status(ApiError(405, "MethodNotAllowed", "the embedded cluster's Kubernetes API is read-only"))
        )

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse  # noqa: N815

    def _send(self, code: int, body: dict[str, Any], close: bool = False) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the server's own log says enough
        pass


def _status(error: ApiError) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": str(error),
        "reason": error.reason,
        **({"details": error.details} if error.details else {}),
        "code": error.code,
    }


class _Server(GuardedHttpServer):
    def __init__(self, address: tuple[str, int], api: KubeApi, guard: HttpGuard, tls: Optional[ssl.SSLContext]):
        self.api = api
        super().__init__(address, _Handler, guard, tls)


class KubeApiServer:
    """The HTTP server on its own thread; `url` is what a kubeconfig's `server` names. `guard` says which
    requests it answers (default: any whose Host names this machine); with `tls` it serves HTTPS."""

    def __init__(
        self, plane: ControlPlane, port: int = 0, guard: HttpGuard = HttpGuard(), tls: Optional[ssl.SSLContext] = None
    ):
        self._scheme = "http" if tls is None else "https"
        try:
            self._server = _Server((HOST, port), KubeApi(plane), guard, tls)
        except OSError as exc:
            raise InvalidConfig(
                "kube_api_port", port, f"{HOST}:{port} is not free ({exc.strerror}); pick another, or 0 for any"
            ) from None
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="kube-api", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"{self._scheme}://{HOST}:{self.port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
