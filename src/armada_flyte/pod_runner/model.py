"""What a launcher hands the pod runner, and how the runner reports back: plain types, nothing below them.

The runner plays the kubelet: it gets a leased pod, says when it is pending and running, and
when it ends, with each container's exit and the error a user should see. The embedded server
and the Armada executor both launch pods through these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Protocol

from armada_flyte.pod_runner.pod_log import PodLog
from armada_flyte.pod_runner.pod_secrets import PodSecrets

DEFAULT_GRACE_SECONDS = 30.0
"""Kubernetes' default terminationGracePeriodSeconds, used when the pod sets none (or 0)."""

DEADLINE_REASON = "DeadlineExceeded"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
"""The pod status reason and message the kubelet sets when activeDeadlineSeconds passes."""


@dataclass(frozen=True)
class PodLaunch:
    """One leased pod: where it was placed and what to run. `pod` is armada_client's k8s PodSpec.

    `labels` and `annotations` are the pod's metadata as Armada's executor sets it (the job's own
    plus Armada's); `injected_env` are the variables Armada adds to every container that does not
    set them itself.
    """

    run_id: str
    job_id: str
    pod_name: str
    namespace: str
    node: str
    node_set: str
    """The name of the cluster file's node set the node belongs to."""
    architecture: str
    pod: Any
    log: PodLog
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    injected_env: Mapping[str, str] = field(default_factory=dict)
    secrets: PodSecrets = field(default_factory=PodSecrets)
    """The pod's Secret references, resolved before launch (a missing one never reaches the runner)."""

    @property
    def container(self) -> Any:
        return self.pod.containers[0]

    @property
    def fields(self) -> dict[str, str]:
        """The pod fields a `fieldRef` env var may read (labels and annotations: `field_value`)."""
        return {
            "metadata.name": self.pod_name,
            "metadata.namespace": self.namespace,
            "metadata.uid": self.run_id,
            "spec.nodeName": self.node,
            "spec.serviceAccountName": self.pod.serviceAccountName or "default",
            "status.hostIP": "127.0.0.1",
            "status.podIP": "127.0.0.1",
        }

    def field_value(self, path: str) -> str:
        """What Kubernetes puts in an env var whose `fieldRef.fieldPath` is `path` ("" for an unknown field)."""
        for prefix, values in (("metadata.labels", self.labels), ("metadata.annotations", self.annotations)):
            if path.startswith(prefix + "['") and path.endswith("']"):
                return values.get(path[len(prefix) + 2 : -2], "")
        return self.fields.get(path, "")


@dataclass(frozen=True)
class ContainerEnd:
    """How one container ended, as its Kubernetes container status says (reason Completed, Error, OOMKilled...)."""

    name: str
    exit_code: int
    reason: str
    message: str = ""


@dataclass(frozen=True)
class PodEnd:
    """How a pod ended: the run's exit code and error, each container's end, and the pod's own reason if any
    (DeadlineExceeded, as the kubelet sets it when activeDeadlineSeconds passes)."""

    exit_code: int
    error: str = ""
    containers: tuple[ContainerEnd, ...] = ()
    reason: str = ""


def failed_containers_text(containers: Iterable[ContainerEnd]) -> str:
    """The lines Armada's `ExtractPodFailedReason` (internal/executor/util/pod_status.go) writes for a failed
    pod, one per container that exited non-zero: "Container X failed with exit code N because R: msg"."""
    return "".join(
        f"Container {c.name} failed with exit code {c.exit_code} because {c.reason}: {c.message}\n"
        for c in containers
        if c.exit_code != 0
    )


def grace_seconds(pod: Any) -> float:
    """How long a stopped pod gets between SIGTERM and SIGKILL."""
    seconds = pod.terminationGracePeriodSeconds if pod.HasField("terminationGracePeriodSeconds") else 0
    return float(seconds) if seconds > 0 else DEFAULT_GRACE_SECONDS


def active_deadline(pod: Any) -> Optional[float]:
    """The pod's activeDeadlineSeconds, or None when it has none."""
    seconds = pod.activeDeadlineSeconds if pod.HasField("activeDeadlineSeconds") else 0
    return float(seconds) if seconds > 0 else None


class RunReporter(Protocol):
    """The launcher's side: `pending` and `running` answer False when the run was stopped meanwhile."""

    def pending(self, run_id: str) -> bool: ...

    def running(self, run_id: str) -> bool: ...

    def finished(
        self, run_id: str, exit_code: int, error: str, containers: tuple[ContainerEnd, ...] = (), reason: str = ""
    ) -> None: ...

    def note(self, run_id: str, text: str) -> None: ...


class PodRunner(Protocol):
    def launch(self, pod: PodLaunch, reporter: RunReporter) -> None:
        """Start the pod without blocking; report its progress through `reporter`."""

    def kill(self, run_id: str, grace_seconds: float) -> None:
        """Stop the pod and everything it started: SIGTERM, then SIGKILL after the grace period."""

    def shutdown(self) -> None:
        """Kill every pod still running and wait until they are gone."""
