"""`EmbeddedArmada`: the Armada-compatible server, started in-process on 127.0.0.1.

    with EmbeddedArmada(EmbeddedConfig(queues=("flyte",))) as armada:
        client = ArmadaClient(grpc.insecure_channel(armada.url))

Leaving the block stops the server and kills every pod still running.
"""

from __future__ import annotations

import contextlib
import functools
import pathlib
import secrets
import shutil
import tempfile
from dataclasses import dataclass, replace
from typing import Mapping, Optional

from armada_client.armada import submit_pb2

from armada_flyte.cluster.cluster_file import Cluster, NodeSet
from armada_flyte.cluster.ingress import IngressController
from armada_flyte.cluster.secrets import SecretStore
from armada_flyte.embedded.config import EmbeddedConfig
from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.kube_api.kubeconfig import kubeconfig_text, write_kubeconfig
from armada_flyte.embedded.kube_api.server import KubeApiServer
from armada_flyte.embedded.kube_api.serving_cert import ServingCert
from armada_flyte.embedded.services.auth import ANONYMOUS
from armada_flyte.embedded.services.call_counts import CallCounter
from armada_flyte.embedded.services.grpc_server import HOST, GrpcServer, start_grpc_server
from armada_flyte.embedded.store.persistence import make_store
from armada_flyte.pod_runner import PodRunner, make_pod_runner
from armada_flyte.pod_runner.process import ProcessPodRunner
from armada_flyte.server_credentials import ClientCredential

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

    What it serves, and how, is its `EmbeddedConfig` (the defaults without one).
    """

    def __init__(self, config: Optional[EmbeddedConfig] = None):
        self.config = config = config if config is not None else EmbeddedConfig()
        cluster = config.cluster
        if cluster is None:
            cluster = Cluster.default()
        elif not isinstance(cluster, Cluster):
            cluster = Cluster.from_yaml(cluster)
        self.cluster = cluster
        self.credentials = config.credentials
        self.tls = config.tls
        self.secrets = SecretStore()
        if config.secrets_file is not None:
            self.secrets.load_file(config.secrets_file)
        for name, data in (config.secrets or {}).items():
            self.secrets.put(name, data)
        self.state_dir = pathlib.Path(config.state_dir).expanduser() if config.state_dir is not None else None
        self._kube_api: Optional[KubeApiServer] = None
        self._kube_tmp: Optional[pathlib.Path] = None
        self.kubeconfig: Optional[pathlib.Path] = None
        """The kubeconfig file of the cluster's Kubernetes API, while the server runs."""
        self._ingress: Optional[IngressController] = None
        self._plane: Optional[ControlPlane] = None
        self._server: Optional[GrpcServer] = None
        self.port = 0
        self.calls = CallCounter()
        """Calls the server has answered, by gRPC method name."""
        self.about: dict[str, str] = {}
        """What the server's job-set listing tells clients beyond Armada's API: `view`, the address of the local
        view serving beside it (`stack_view` sets it)."""

    def start(self) -> EmbeddedArmada:
        """Start every part; if one fails, those already started are stopped again, newest first."""
        config = self.config
        with contextlib.ExitStack() as rollback:
            store = make_store(self.state_dir)
            rollback.callback(store.close)
            ingress = IngressController(config.ingress_port, config.http_guard).start()
            rollback.callback(ingress.stop)
            plane = ControlPlane(
                self.cluster,
                self._make_pod_runner(),
                visibility_delay=config.visibility_delay,
                paused=config.paused,
                default_priority_class=config.default_priority_class,
                secrets=self.secrets,
                store=store,
                ingress=ingress,
            )
            rollback.callback(plane.stop)
            rollback.callback(self._stop_kube_api)
            self._start_kube_api(plane)
            plane.start()
            self._server, self.port = start_grpc_server(
                plane, config.port, credentials=self.credentials, tls=self.tls, counter=self.calls, about=self.about
            )
            rollback.pop_all()
        self._ingress = ingress
        self._plane = plane
        for name in config.queues:
            if name not in plane.queues:  # a saved queue keeps its settings
                self.create_queue(name)
        return self

    def _make_pod_runner(self) -> PodRunner:
        kind = self.config.pod_runner
        if not isinstance(kind, str):
            return kind
        if kind != "process":
            return make_pod_runner(kind, fence=self.cluster.pod_fence)
        options = {
            "sandbox_root": self.config.sandbox_root,
            "private_prefixes": self.config.private_prefixes,
            "images": self.cluster.images,
            "cpu_shares": self.cluster.cpu_shares,
            "fence": self.cluster.pod_fence,
        }
        return make_pod_runner(kind, **options)

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
        """Serve the cluster's Kubernetes API and write its kubeconfig; process pods get one of their own.

        With credentials, the API serves HTTPS (client-go sends credentials only over TLS) and the kubeconfig
        carries one of them; pods get a token of their own that only this API accepts (as a service account's
        token is not the admin's): it lets them read the cluster, not submit to Armada."""
        guard = self.config.http_guard
        credential = pod_credential = cert = None
        if guard.credentials is not None:
            credential = guard.credentials.one()
            pod_credential = ClientCredential(token=secrets.token_urlsafe(32))
            guard = replace(guard, credentials=guard.credentials.with_token(pod_credential.token))
            cert = ServingCert.generate(guard.allowed_hosts)
        tls = cert.server_context() if cert is not None else None
        self._kube_api = KubeApiServer(plane, self.config.kube_api_port, guard, tls)
        path = pathlib.Path(self.config.kubeconfig).expanduser() if self.config.kubeconfig is not None else None
        if path is None and self.state_dir is not None:
            path = self.state_dir / "kubeconfig"
        if path is None:
            self._kube_tmp = pathlib.Path(tempfile.mkdtemp(prefix="armada-flyte-kube-"))
            path = self._kube_tmp / "kubeconfig"
        ca_pem = cert.cert_pem if cert is not None else None
        url = self._kube_api.url
        self.kubeconfig = write_kubeconfig(path, kubeconfig_text(url, credential=credential, ca_pem=ca_pem))
        if isinstance(plane.pod_runner, ProcessPodRunner):
            plane.pod_runner.kubeconfig = functools.partial(
                kubeconfig_text, url, credential=pod_credential, ca_pem=ca_pem
            )

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
        """`http://127.0.0.1:PORT` of the cluster's read-only Kubernetes API (`https://` when it needs credentials)."""
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
    def node_sets(self) -> list[NodeSet]:
        return list(self.cluster.node_sets)

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
        with self.plane.queries.lock():
            job = self.plane.queries.find_job(job_id)
            if job is None:
                return None
            run = job.latest_run
            group = run.node.node_set if run else None
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
        job = self.plane.queries.find_job(job_id)
        run = job.latest_run if job else None
        return run.log.texts() if run else []

    def sandbox_of(self, job_id: str) -> Optional[pathlib.Path]:
        """The folder a process pod runner's pod used as its private filesystem (None for other pod runners)."""
        runner = self.plane.pod_runner
        return runner.sandbox_of(job_id) if isinstance(runner, ProcessPodRunner) else None
