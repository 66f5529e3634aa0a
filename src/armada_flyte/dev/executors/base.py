"""What the control plane hands an executor, and how the executor reports back.

An executor plays the kubelet: it gets a leased pod, says when it is pending and running,
and when it ends, with the exit code and the error a user should see.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from armada_flyte.architecture import Architecture
from armada_flyte.dev.logs import PodLog
from armada_flyte.errors import InvalidConfig

DEFAULT_GRACE_SECONDS = 30.0
"""Kubernetes' default terminationGracePeriodSeconds, used when the pod sets none (or 0)."""


@dataclass(frozen=True)
class PodLaunch:
    """One leased pod: where it was placed and what to run. `pod` is armada_client's k8s PodSpec."""

    run_id: str
    job_id: str
    pod_name: str
    namespace: str
    node: str
    node_group: str
    architecture: str
    pod: Any
    log: PodLog

    @property
    def container(self) -> Any:
        return self.pod.containers[0]

    @property
    def fields(self) -> dict[str, str]:
        """The pod fields a `fieldRef` env var may read."""
        return {"metadata.name": self.pod_name, "metadata.namespace": self.namespace, "spec.nodeName": self.node}



def grace_seconds(pod: Any) -> float:
    """How long a stopped pod gets between SIGTERM and SIGKILL."""
    seconds = pod.terminationGracePeriodSeconds if pod.HasField("terminationGracePeriodSeconds") else 0
    return float(seconds) if seconds > 0 else DEFAULT_GRACE_SECONDS


def container_env(container: Any, fields: dict[str, str], map_value: Callable[[str], str] = str) -> dict[str, str]:
    """The container's env vars: literal values through `map_value`, `fieldRef`s from the pod's fields."""
    env = {}
    for var in container.env:
        if var.HasField("valueFrom") and var.valueFrom.HasField("fieldRef"):
            env[var.name] = fields.get(var.valueFrom.fieldRef.fieldPath, "")
        else:
            env[var.name] = map_value(var.value)
    return env


class RunReporter(Protocol):
    """The control plane's side: `pending` and `running` answer False when the run was stopped meanwhile."""

    def pending(self, run_id: str) -> bool: ...

    def running(self, run_id: str) -> bool: ...

    def finished(self, run_id: str, exit_code: int, error: str) -> None: ...

    def note(self, run_id: str, text: str) -> None: ...


class Executor(Protocol):
    def launch(self, pod: PodLaunch, reporter: RunReporter) -> None:
        """Start the pod without blocking; report its progress through `reporter`."""

    def kill(self, run_id: str, grace_seconds: float) -> None:
        """Stop the pod and everything it started: SIGTERM, then SIGKILL after the grace period."""

    def shutdown(self) -> None:
        """Kill every pod still running and wait until they are gone."""


def host_architecture() -> str:
    """This machine's architecture as `kubernetes.io/arch` spells it (x86_64 -> amd64, aarch64 -> arm64)."""
    machine = platform.machine()
    try:
        return Architecture.parse(machine).value
    except InvalidConfig:
        return machine.lower()
