"""`EmbeddedArmada`: the Armada-compatible server, started in-process on 127.0.0.1.

    with EmbeddedArmada() as armada:
        client = ArmadaClient(grpc.insecure_channel(armada.url))

Leaving the block stops the server and kills every pod still running.
"""

from __future__ import annotations

import functools
import pathlib
import shutil
import tempfile
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from armada_client.armada import submit_pb2

from armada_flyte.embedded.auth import ANONYMOUS, Credentials
from armada_flyte.embedded.call_counts import CallCounter
from armada_flyte.embedded.cluster import Cluster, ClusterNodeGroup
from armada_flyte.embedded.control_plane import ControlPlane
from armada_flyte.embedded.ingress import IngressController
from armada_flyte.embedded.kube_api import KubeApiServer
from armada_flyte.embedded.kubeconfig import kubeconfig_text, write_kubeconfig
from armada_flyte.embedded.secrets import SecretStore
from armada_flyte.embedded.server import HOST, GrpcServer, TlsFiles, start_grpc_server
from armada_flyte.embedded.server_defaults import DEFAULT_PRIORITY_CLASS, PRIORITY_CLASSES
from armada_flyte.embedded.state_store import make_store
from armada_flyte.errors import InvalidConfig
from armada_flyte.pod_runner import PodRunner, make_pod_runner
from armada_flyte.pod_runner.process import ProcessPodRunner
from armada_flyte.pod_runner.sandbox import DEFAULT_PRIVATE_PREFIXES

_STOP_GRACE_SECONDS = 1.0


@dataclass(frozen=True)
class JobView:
    """What the server knows of a job, for tests and tools running beside it (gRPC clients use Jobs.GetJobDetails)."""

    job_id: str
    queue: str
    job_set: str
    state: str
    node: Optional[str]
    node_group: Optional[str]
    architecture: Optional[str]
    exit_code: Optional[int]
    error: str
    note: str
    """What the executor did differently from a real cluster (e.g. ran an arm64 pod natively on amd64)."""


class EmbeddedArmada:
    """Armada's gRPC API, scheduler and an executor, in this process, on a port of 127.0.0.1.

    `cluster` is a `Cluster`, a path to a cluster YAML, or None for the default (amd64 and
    tainted arm64 groups). `executor` is "process" (pods run as local processes), "docker", or
    a `PodRunner` object of your own.
    `paused` leaves scheduled jobs LEASED until `resume()`. `visibility_delay` makes a new job
    read UNKNOWN on the Jobs API for that many seconds, as on a real cluster.
    `auth` ("basic:USER:PASSWORD", "bearer:TOKEN") requires credentials on every call, as Armada
    does; `tls_cert` and `tls_key` (PEM files) serve TLS instead of plaintext.
    `secrets` ({name: {key: value}}) and `secrets_file` (Kubernetes Secret manifests) are the
    cluster's Secrets, which pods' `secretKeyRef`, `envFrom.secretRef` and `secret` volumes read;
    `add_secret` adds more while it runs.
    `default_priority_class` is the class a job without one gets (Armada's
    `submission.defaultPriorityClassName`; armada-preemptible makes such jobs preemptible).
    `state_dir` keeps queues, jobs, events and pod logs in an SQLite file there, so a server
    started again on it goes on where the last one stopped; None (the default) keeps them in
    memory only.
    `kubeconfig` is where the kubeconfig of the cluster's read-only Kubernetes API is written
    (default: `state_dir/kubeconfig`, else a temporary file removed at stop); `kube_api_port`
    is that API's port on 127.0.0.1 (0: any free one).
    """

    def __init__(
        self,
        cluster: Cluster | str | pathlib.Path | None = None,
        port: int = 0,
        executor: str | PodRunner = "process",
        queues: Iterable[str] = ("flyte",),
        *,
        paused: bool = False,
        visibility_delay: float = 0.0,
        default_priority_class: str = DEFAULT_PRIORITY_CLASS,
        sandbox_root: str | pathlib.Path | None = None,
        private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES,
        auth: Iterable[str] = (),
        tls_cert: str | pathlib.Path | None = None,
        tls_key: str | pathlib.Path | None = None,
        secrets: Optional[Mapping[str, Mapping[str, str | bytes]]] = None,
        secrets_file: str | pathlib.Path | None = None,
        state_dir: str | pathlib.Path | None = None,
        kubeconfig: str | pathlib.Path | None = None,
        kube_api_port: int = 0,
        ingress_port: int = 0,
    ):
        if cluster is None:
            cluster = Cluster.default()
        elif not isinstance(cluster, Cluster):
            cluster = Cluster.from_yaml(cluster)
        self.cluster = cluster
        self.requested_port = port
        self._executor = executor
        self._executor_options = (
            {
                "sandbox_root": sandbox_root,
                "private_prefixes": private_prefixes,
                "images": cluster.images,
                "cpu_shares": cluster.cpu_shares,
            }
            if executor == "process"
            else {}
        )
        self._initial_queues = tuple(queues)
        self._paused = paused
        self._visibility_delay = visibility_delay
        if default_priority_class not in PRIORITY_CLASSES:
            raise InvalidConfig(
                "default_priority_class", default_priority_class, f"use one of {', '.join(PRIORITY_CLASSES)}"
            )
        self._default_priority_class = default_priority_class
        self.credentials = Credentials.parse(auth)
        if (tls_cert is None) != (tls_key is None):
            raise InvalidConfig("tls_cert", str(tls_cert or tls_key), "give both tls_cert and tls_key, or neither")
        self.tls = TlsFiles(pathlib.Path(tls_cert), pathlib.Path(tls_key)) if tls_cert and tls_key else None
        self.secrets = SecretStore()
        if secrets_file is not None:
            self.secrets.load_file(secrets_file)
        for name, data in (secrets or {}).items():
            self.secrets.put(name, data)
        self.state_dir = pathlib.Path(state_dir).expanduser() if state_dir is not None else None
        self._kubeconfig = pathlib.Path(kubeconfig).expanduser() if kubeconfig is not None else None
        self._kube_api_port = kube_api_port
        self._kube_api: Optional[KubeApiServer] = None
        self._kube_tmp: Optional[pathlib.Path] = None
        self.kubeconfig: Optional[pathlib.Path] = None
        """The kubeconfig file of the cluster's Kubernetes API, while the server runs."""
        self.requested_ingress_port = ingress_port
        self._ingress: Optional[IngressController] = None
        self._plane: Optional[ControlPlane] = None
        self._server: Optional[GrpcServer] = None
        self.port = 0
        self.calls = CallCounter()
        """Calls the server has answered, by gRPC method name."""

    def start(self) -> EmbeddedArmada:
        store = make_store(self.state_dir)
        ingress = None
        try:
            ingress = IngressController(self.requested_ingress_port).start()
            executor = self._executor
            if isinstance(executor, str):
                executor = make_pod_runner(executor, **self._executor_options)
            plane = ControlPlane(
                self.cluster,
                executor,
                visibility_delay=self._visibility_delay,
                paused=self._paused,
                default_priority_class=self._default_priority_class,
                secrets=self.secrets,
                store=store,
                ingress=ingress,
            )
        except BaseException:
            store.close()
            if ingress is not None:
                ingress.stop()
            raise
        self._ingress = ingress
        try:
            self._start_kube_api(plane)
        except BaseException:
            plane.stop()
            self._stop_kube_api()
            ingress.stop()
            raise
        plane.start()
        try:
            self._server, self.port = start_grpc_server(
                plane, self.requested_port, credentials=self.credentials, tls=self.tls, counter=self.calls
            )
        except BaseException:
            plane.stop()
            self._stop_kube_api()
            ingress.stop()
            raise
        self._plane = plane
        for name in self._initial_queues:
            if name not in plane.queues:  # a saved queue keeps its settings
                self.create_queue(name)
        return self

    def stop(self) -> None:
        """End event streams, stop serving, then stop scheduling and kill every pod still running."""
        plane, server = self._plane, self._server
        self._plane = self._server = None
        if plane is not None:
            plane.events.close()
        if server is not None:
            server.stop(_STOP_GRACE_SECONDS)
        if plane is not None:
            plane.stop()
        self._stop_kube_api()
        if self._ingress is not None:
            self._ingress.stop()
            self._ingress = None

    def _start_kube_api(self, plane: ControlPlane) -> None:
        """Serve the cluster's Kubernetes API and write its kubeconfig; process pods get one of their own."""
        self._kube_api = KubeApiServer(plane, self._kube_api_port)
        path = self._kubeconfig
        if path is None and self.state_dir is not None:
            path = self.state_dir / "kubeconfig"
        if path is None:
            self._kube_tmp = pathlib.Path(tempfile.mkdtemp(prefix="armada-flyte-kube-"))
            path = self._kube_tmp / "kubeconfig"
        self.kubeconfig = write_kubeconfig(path, self._kube_api.url)
        if isinstance(plane.executor, ProcessPodRunner):
            plane.executor.kubeconfig = functools.partial(kubeconfig_text, self._kube_api.url)

    def _stop_kube_api(self) -> None:
        if self._kube_api is not None:
            self._kube_api.stop()
            self._kube_api = None
        if self._kube_tmp is not None:
            shutil.rmtree(self._kube_tmp, ignore_errors=True)
            self._kube_tmp = None
        self.kubeconfig = None

    @property
    def kube_api_url(self) -> str:
        """`http://127.0.0.1:PORT` of the cluster's read-only Kubernetes API."""
        if self._kube_api is None:
            raise RuntimeError("the embedded Armada is not running; use it in a `with` block or call start()")
        return self._kube_api.url

    def __enter__(self) -> EmbeddedArmada:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """`host:port` for `grpc.insecure_channel`, armada_client and `JobLogClient` alike."""
        return f"{HOST}:{self.port}"

    @property
    def ingress_url(self) -> str:
        """`http://127.0.0.1:PORT` of the ingress controller: send a job's ingress host as the Host header."""
        if self._ingress is None:
            raise RuntimeError("the embedded Armada is not running; use it in a `with` block or call start()")
        return f"http://{HOST}:{self._ingress.port}"

    @property
    def node_groups(self) -> list[ClusterNodeGroup]:
        return list(self.cluster.node_groups)

    @property
    def plane(self) -> ControlPlane:
        if self._plane is None:
            raise RuntimeError("the embedded Armada is not running; use it in a `with` block or call start()")
        return self._plane

    def create_queue(self, name: str, priority_factor: float = 1.0) -> None:
        self.plane.queues.create(submit_pb2.Queue(name=name, priority_factor=priority_factor), ANONYMOUS)

    def add_secret(self, name: str, data: Mapping[str, str | bytes]) -> None:
        """Create (or replace) the Kubernetes Secret `name`, visible in every namespace; pods launched
        from now on read it."""
        self.secrets.put(name, data)

    def pause(self) -> None:
        """Hold new leases: scheduled jobs stay LEASED and nothing starts until `resume()`."""
        self.plane.pause()

    def resume(self) -> None:
        self.plane.resume()

    def lose_pods(self) -> None:
        """An executor restart that lost its pods: running jobs fail as Armada's executor reports a
        missing pod, pods still starting have their leases returned and are retried."""
        self.plane.lose_pods()

    def job(self, job_id: str) -> Optional[JobView]:
        """The job's state and where its latest run was placed, or None if the id is unknown."""
        with self.plane.lock():
            job = self.plane.find_job(job_id)
            if job is None:
                return None
            run = job.latest_run
            group = run.node.group if run else None
            return JobView(
                job_id=job.id,
                queue=job.queue,
                job_set=job.job_set,
                state=job.state.name,
                node=run.node.name if run else None,
                node_group=group.name if group else None,
                architecture=group.architecture if group else None,
                exit_code=run.exit_code if run else None,
                error=job.error or (run.error if run else ""),
                note=run.note if run else "",
            )

    def logs(self, job_id: str) -> list[str]:
        """The latest run's log lines (stdout and stderr as they arrived), empty before it runs."""
        job = self.plane.find_job(job_id)
        run = job.latest_run if job else None
        return run.log.texts() if run else []

    def sandbox_of(self, job_id: str) -> Optional[pathlib.Path]:
        """The folder a process-executor pod used as its private filesystem (None for other executors)."""
        executor = self.plane.executor
        return executor.sandbox_of(job_id) if isinstance(executor, ProcessPodRunner) else None
