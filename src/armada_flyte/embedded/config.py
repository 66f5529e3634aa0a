"""`EmbeddedConfig`: everything an `EmbeddedArmada` is started with, checked when it is made."""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass, field
from typing import Mapping, Optional

from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.embedded.rules.defaults import DEFAULT_PRIORITY_CLASS, PRIORITY_CLASSES
from armada_flyte.embedded.services.grpc_server import TlsFiles
from armada_flyte.errors import InvalidConfig
from armada_flyte.http_guard import IDLE_SECONDS, HttpGuard
from armada_flyte.pod_runner import PodRunner
from armada_flyte.pod_runner.sandbox import DEFAULT_PRIVATE_PREFIXES
from armada_flyte.server_credentials import Credentials


@dataclass(frozen=True)
class EmbeddedConfig:
    cluster: Cluster | str | pathlib.Path | None = None
    """A `Cluster`, a path to a cluster YAML, or None for the default (amd64 and tainted arm64 groups)."""
    port: int = 0
    """The gRPC port on 127.0.0.1 (0: any free one)."""
    pod_runner: str | PodRunner = "process"
    """The pod runner: "process" (pods run as local processes), "docker", or a `PodRunner` object of your own."""
    queues: tuple[str, ...] = ("flyte",)
    """Queues created at start (a queue saved in `state_dir` keeps its settings)."""
    paused: bool = False
    """Leave scheduled jobs LEASED until `EmbeddedArmada.resume()`."""
    visibility_delay: float = 0.0
    """Seconds a new job reads UNKNOWN on the Jobs API, as on a real cluster."""
    default_priority_class: str = DEFAULT_PRIORITY_CLASS
    """The class a job without one gets (Armada's `submission.defaultPriorityClassName`;
    armada-preemptible makes such jobs preemptible)."""
    sandbox_root: str | pathlib.Path | None = None
    """Where the process pod runner's pods get their private folders (None: a temporary folder)."""
    private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES
    """Host paths the process pod runner's pods can't see."""
    auth: tuple[str, ...] = field(default=(), repr=False)
    """Credentials ("basic:USER:PASSWORD", "bearer:TOKEN") every call must carry, as Armada requires; the
    Kubernetes API and the ingress controller require them too."""
    tls_cert: str | pathlib.Path | None = None
    """With `tls_key` (PEM files): serve TLS instead of plaintext."""
    tls_key: str | pathlib.Path | None = None
    secrets: Optional[Mapping[str, Mapping[str, str | bytes]]] = None
    """The cluster's Secrets ({name: {key: value}}), which pods' `secretKeyRef`, `envFrom.secretRef` and
    `secret` volumes read; `EmbeddedArmada.add_secret` adds more while it runs."""
    secrets_file: str | pathlib.Path | None = None
    """More Secrets, as Kubernetes Secret manifests in a YAML file."""
    state_dir: str | pathlib.Path | None = None
    """Keep queues, jobs, events and pod logs in an SQLite file there, so a server started again on it
    goes on where the last one stopped; None keeps them in memory only."""
    kubeconfig: str | pathlib.Path | None = None
    """Where the kubeconfig of the cluster's read-only Kubernetes API is written (default:
    `state_dir/kubeconfig`, else a temporary file removed at stop)."""
    kube_api_port: int = 0
    """The Kubernetes API's port on 127.0.0.1 (0: any free one)."""
    ingress_port: int = 0
    """The ingress controller's port on 127.0.0.1 (0: any free one)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names besides 127.0.0.1 and localhost the Kubernetes API answers to (others are refused: DNS
    rebinding)."""
    idle_seconds: float = IDLE_SECONDS
    """How long a connection to the Kubernetes API or the ingress controller may idle before it is dropped."""
    executor: str | PodRunner | None = field(default=None, repr=False)
    """The old spelling of `pod_runner`, still accepted (it then reads None)."""

    def __post_init__(self) -> None:
        if self.executor is not None:  # the old spelling of pod_runner
            if self.pod_runner != "process" and self.pod_runner is not self.executor:
                raise InvalidConfig("executor", self.executor, "give only pod_runner (executor is its old spelling)")
            object.__setattr__(self, "pod_runner", self.executor)
            object.__setattr__(self, "executor", None)
        object.__setattr__(self, "queues", tuple(self.queues))
        object.__setattr__(self, "auth", tuple(self.auth))
        object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))
        if not (math.isfinite(self.idle_seconds) and self.idle_seconds > 0):
            raise InvalidConfig("idle_seconds", self.idle_seconds, "give a number of seconds above 0")
        if not (math.isfinite(self.visibility_delay) and self.visibility_delay >= 0):
            raise InvalidConfig("visibility_delay", self.visibility_delay, "give a number of seconds, 0 or more")
        if self.default_priority_class not in PRIORITY_CLASSES:
            raise InvalidConfig(
                "default_priority_class", self.default_priority_class, f"use one of {', '.join(PRIORITY_CLASSES)}"
            )
        Credentials.parse(self.auth)
        if (self.tls_cert is None) != (self.tls_key is None):
            raise InvalidConfig(
                "tls_cert", str(self.tls_cert or self.tls_key), "give both tls_cert and tls_key, or neither"
            )

    @property
    def credentials(self) -> Optional[Credentials]:
        """The accepted credentials; None: no authentication."""
        return Credentials.parse(self.auth)

    @property
    def http_guard(self) -> HttpGuard:
        """What the server's HTTP parts (and the view beside it) check: Host names and these credentials."""
        return HttpGuard.of(self.credentials, self.allowed_hosts, self.idle_seconds)

    @property
    def tls(self) -> Optional[TlsFiles]:
        if self.tls_cert and self.tls_key:
            return TlsFiles(pathlib.Path(self.tls_cert), pathlib.Path(self.tls_key))
        return None
