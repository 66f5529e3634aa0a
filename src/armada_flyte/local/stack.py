"""Everything a laptop run needs, on 127.0.0.1: the embedded Armada server and an S3 blob store.

`LocalStack` starts both, creates the bucket and queue, points the connector at them, and
hands back what `flyte.init` needs, so a real Flyte workflow runs through the connector into
pods that really execute.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pathlib
import sys
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Optional

from armada_flyte.connector.config import settings as connector_settings
from armada_flyte.http_guard import IDLE_SECONDS, HttpGuard, misdirected
from armada_flyte.local import console, inflight

log = logging.getLogger(__name__)

BUCKET = "flyte"
ACCESS_KEY = "armada-flyte-local"
SECRET_KEY = "armada-flyte-local-secret"
REGION = "us-east-1"
BLOB_CREDENTIALS_SECRET = "armada-flyte-blob-credentials"
"""The embedded cluster's Secret holding the pods' blob keys, as a production cluster would hold them."""


@dataclass(frozen=True)
class LocalEndpoints:
    """Where the local stack listens, and the Flyte settings that use it."""

    armada_url: str
    blob_endpoint: str
    """Empty when the stack runs without a blob store."""
    bucket: str
    queue: str
    server: Any = None
    """The running `EmbeddedArmada` (node groups, jobs, logs)."""

    @property
    def raw_data_path(self) -> str:
        return f"s3://{self.bucket}/raw"

    def blob_settings(self) -> dict[str, Any]:
        """The connector's settings for this stack's blob store (empty without one)."""
        if not self.blob_endpoint:
            return {}
        return {
            "blob_endpoint": self.blob_endpoint,
            "blob_access_key": ACCESS_KEY,
            "blob_secret_key": SECRET_KEY,
            "blob_credentials_secret": BLOB_CREDENTIALS_SECRET,
        }

    def connector_settings(self) -> dict[str, Any]:
        """Settings that point the connector at this stack (for `armada_flyte.configure`)."""
        return {
            "armada_url": self.armada_url,
            "blob_endpoint": self.blob_endpoint,
            "blob_access_key": ACCESS_KEY,
            "blob_secret_key": SECRET_KEY,
            "blob_credentials_secret": BLOB_CREDENTIALS_SECRET,
            "node_groups_preset": "embedded",
            "first_poll_seconds": 0.05,
            "poll_interval_seconds": 0.5,
        }

    def exports(self) -> list[str]:
        """Shell lines that point the connector, a0 and `flyte.storage.S3.auto()` at this stack."""
        lines = [f"export ARMADA_URL={self.armada_url} ARMADA_FLYTE_NODE_GROUPS_PRESET=embedded"]
        if self.blob_endpoint:
            lines.append(
                f"export FLYTE_BLOB_ENDPOINT={self.blob_endpoint} FLYTE_BLOB_ACCESS_KEY={ACCESS_KEY} "
                f"FLYTE_BLOB_SECRET_KEY={SECRET_KEY} ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET={BLOB_CREDENTIALS_SECRET}"
            )
            lines.append(
                f"export FLYTE_AWS_ENDPOINT={self.blob_endpoint} FLYTE_AWS_ACCESS_KEY_ID={ACCESS_KEY} "
                f"FLYTE_AWS_SECRET_ACCESS_KEY={SECRET_KEY} ARMADA_FLYTE_RAW_DATA_PATH={self.raw_data_path}"
            )
        return lines

    def job_sets(self) -> list[tuple[str, str]]:
        """Every (queue, job set) the embedded server holds, for the local view: Armada's API lists no
        job sets, but this server is in the process."""
        return sorted({(job.queue, job.job_set) for job in self.server.plane.queries.all_jobs()}) if self.server else []

    def flyte_storage(self) -> Any:
        import flyte.storage

        return flyte.storage.S3(endpoint=self.blob_endpoint, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY)

    def init_flyte(self, root_dir: pathlib.Path | str) -> None:
        """`flyte.init` for local runs whose tasks go through Armada."""
        import flyte

        flyte.init(root_dir=pathlib.Path(root_dir).expanduser().resolve(), storage=self.flyte_storage())


def blob_credentials_manifest() -> dict[str, Any]:
    """The Kubernetes Secret holding the pods' blob keys, as a manifest (for `armada-flyte executor
    --secrets-file`, when the stack uses an Armada it did not start)."""
    data = {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": BLOB_CREDENTIALS_SECRET}, "stringData": data}


class LocalBlobServer:
    """moto's S3-compatible server on 127.0.0.1, in a thread of this process.

    moto takes any keys (it checks no signature), so the server answers only requests whose Host names
    this machine or an allowed name (a web page can't read the bucket through a DNS name rebound to
    127.0.0.1), and drops connections idle longer than `idle_seconds`."""

    def __init__(
        self,
        port: int = 0,
        bucket: str = BUCKET,
        *,
        allowed_hosts: Iterable[str] = (),
        idle_seconds: float = IDLE_SECONDS,
    ):
        self._port = port
        self.bucket = bucket
        self._guard = HttpGuard.of(None, allowed_hosts, idle_seconds)
        self._server: Any = None
        self._thread: Optional[threading.Thread] = None
        self.endpoint = ""

    def start(self) -> LocalBlobServer:
        from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        class Handler(MotoRequestHandler):
            timeout = self._guard.idle_seconds  # read by StreamRequestHandler.setup

            def log_error(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
                log.debug("blob store: " + format, *args)  # a dropped idle connection is no error

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        app = _HostCheck(DomainDispatcherApplication(create_backend_app), self._guard)
        self._server = make_server("127.0.0.1", self._port, app, threaded=True, request_handler=Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="blob-store", daemon=True)
        self._thread.start()
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._create_bucket()
        return self

    def client(self) -> Any:
        """A boto3 S3 client of this store, with its keys."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def _create_bucket(self) -> None:
        self.client().create_bucket(Bucket=self.bucket)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


class _HostCheck:
    """WSGI middleware: answers 421 to a request whose Host `guard` does not allow, passes the rest on."""

    def __init__(self, app: Any, guard: HttpGuard):
        self._app = app
        self._guard = guard

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        host = environ.get("HTTP_HOST")
        if self._guard.host_allowed(host):
            return self._app(environ, start_response)
        refusal = misdirected(host, self._guard.allowed_hosts)
        body = (refusal.message + "\n").encode()
        headers = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
        start_response(f"{refusal.status} {refusal.reason}", headers)
        return [body]


def stop_connector_view(within: float = 5.0) -> None:
    """Close the connector local runs use (Flyte's registered one), and wait (at most `within` seconds) for
    its status view to stop following job sets: followers that outlive the server would warn that it is
    unavailable until the process ends. The next run reopens it."""
    if "armada_flyte.connector.service" not in sys.modules:  # no local run loaded the connector
        return
    from flyte.connectors import ConnectorRegistry

    from armada_flyte.spec import TASK_TYPE

    connector = ConnectorRegistry.get_connector(TASK_TYPE)
    closed: list[Any] = []

    async def close() -> None:
        closed.append((await connector.context()).view)
        await connector.close()

    # A loop of its own, in a thread of its own: the caller's thread may be running one.
    closer = threading.Thread(target=asyncio.run, args=(close(),), name="close-connector")
    closer.start()
    closer.join(within)
    if closed and not closed[0].wait_stopped(within):
        log.warning("the connector's status view did not stop within %gs", within)


@contextlib.contextmanager
def stack_view(
    stack: LocalEndpoints,
    *,
    port: int = 0,
    settings: Optional[connector_settings.ConnectorConfig] = None,
    guard: Optional[HttpGuard] = None,
) -> Iterator[str]:
    """The local view of the stack's server on 127.0.0.1, following every job set it holds; yields its address.

    `settings` say how to reach the server when it needs TLS or credentials, and the blob store, where the
    view reads what each task recorded (a0's error.pb: a task that raised reads FAILED, not Armada's
    SUCCEEDED). The view requires what the server's HTTP parts do (`guard`, default the embedded server's:
    its credentials, its allowed Host names): it shows what the server tells those settings' credentials."""
    from armada_flyte.connector.config.node_groups import NodeGroups
    from armada_flyte.view.http_server import serving

    settings = settings or connector_settings.settings_from(armada_url=stack.armada_url, **stack.blob_settings())
    if guard is None:
        guard = stack.server.config.http_guard if stack.server is not None else HttpGuard()
    with serving(settings, stack.job_sets, node_groups=NodeGroups.preset("embedded"), port=port, guard=guard) as view:
        console.summary.view_url = view.url
        if stack.server is not None:
            stack.server.about["view"] = view.url  # a run of another process asks the server where to look
        try:
            yield view.url
        finally:
            console.summary.view_url = ""
            if stack.server is not None:
                stack.server.about.pop("view", None)


@contextlib.contextmanager
def local_stack(
    *,
    armada_port: int = 0,
    blob_port: int = 0,
    queue: str = "flyte",
    cluster: Optional[pathlib.Path] = None,
    pod_runner: str = "process",
    visibility_delay: float = 0.0,
    paused: bool = False,
    blob_store: bool = True,
    configure_connector: bool = True,
    auth: tuple[str, ...] = (),
    tls_cert: Optional[str] = None,
    tls_key: Optional[str] = None,
    secrets: Optional[Mapping[str, Mapping[str, str]]] = None,
    secrets_file: Optional[pathlib.Path] = None,
    state_dir: Optional[pathlib.Path] = None,
    kubeconfig: Optional[pathlib.Path] = None,
    ingress_port: int = 0,
    allowed_hosts: tuple[str, ...] = (),
    armada_url: str = "",
) -> Iterator[LocalEndpoints]:
    """Start the embedded Armada server and (unless `blob_store` is false) the blob store; stop
    both, and every pod, on exit.

    The blob keys reach the pods as production's do: from a Kubernetes Secret of the embedded
    cluster (`BLOB_CREDENTIALS_SECRET`), which the connector settings name, never as values in a
    job spec. `secrets` and `secrets_file` add the cluster's other Secrets (task secrets).
    `state_dir` keeps the server's state there across restarts; None (the default) keeps it in
    memory, so each stack starts empty. `paused` holds leases (nothing runs), as `EmbeddedArmada` does.
    `kubeconfig` is where the server writes the kubeconfig of its read-only Kubernetes API (default:
    in `state_dir`, else a temporary file). `allowed_hosts` are Host names besides 127.0.0.1 and
    localhost that the blob store, the Kubernetes API and the view answer to.

    `armada_url` names an Armada already running (real Armada on a bed, scripts/real-armada.sh) to
    use instead of starting the embedded server; its executor must then hold the Secrets
    (`BLOB_CREDENTIALS_SECRET` and any task secrets), its queue must exist, and the server
    options above do not apply."""
    blob = LocalBlobServer(blob_port, allowed_hosts=allowed_hosts).start() if blob_store else None
    try:
        if armada_url:
            endpoints = LocalEndpoints(armada_url, blob.endpoint if blob else "", BUCKET, queue)
            with _connector_configured(endpoints, configure_connector):
                yield endpoints
            return
        from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

        cluster_secrets: dict[str, Mapping[str, str]] = dict(secrets or {})
        if blob is not None:
            cluster_secrets[BLOB_CREDENTIALS_SECRET] = {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY}
        with EmbeddedArmada(
            EmbeddedConfig(
                cluster=cluster,
                port=armada_port,
                pod_runner=pod_runner,
                queues=(queue,),
                visibility_delay=visibility_delay,
                paused=paused,
                auth=auth,
                tls_cert=tls_cert,
                tls_key=tls_key,
                secrets=cluster_secrets,
                secrets_file=secrets_file,
                state_dir=state_dir,
                kubeconfig=kubeconfig,
                ingress_port=ingress_port,
                allowed_hosts=allowed_hosts,
            )
        ) as armada:
            endpoints = LocalEndpoints(armada.url, blob.endpoint if blob else "", BUCKET, queue, armada)
            console.summary.in_process = armada.url if state_dir is None else ""
            try:
                with _connector_configured(endpoints, configure_connector):
                    yield endpoints
            finally:
                if state_dir is None:  # its jobs are gone with it: no job set to point at
                    console.summary.forget()
    finally:
        if blob is not None:
            blob.stop()


@contextlib.contextmanager
def _connector_configured(endpoints: LocalEndpoints, configure: bool) -> Iterator[None]:
    """Point the connector at the stack while it runs (when `configure`); after, stop the connector's
    status view and reset its settings."""
    if configure:
        connector_settings.configure(**endpoints.connector_settings())
    try:
        yield
    finally:
        inflight.abandon_all()  # calls a failed run left running: cancelled while the server still answers
        stop_connector_view()
        if configure:
            connector_settings.reset()
