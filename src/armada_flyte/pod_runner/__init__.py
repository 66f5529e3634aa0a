"""The pod runner: runs leased pods on this machine, as the kubelet would, for whoever leased them.

It knows nothing of the control plane that placed the pod: a launcher (the embedded server, or
`armada-flyte executor` against a real Armada) builds a `PodLaunch`, passes a `RunReporter`, and
calls `kill` on cancel. Pods run as local processes (`process`) or as Docker containers (`docker`).
"""

from __future__ import annotations

from armada_flyte.errors import InvalidConfig
from armada_flyte.pod_runner.images import Image, ImageCatalogue
from armada_flyte.pod_runner.model import (
    DEADLINE_MESSAGE,
    DEADLINE_REASON,
    ContainerEnd,
    PodEnd,
    PodLaunch,
    PodRunner,
    RunReporter,
    failed_containers_text,
    grace_seconds,
)
from armada_flyte.pod_runner.pod_log import PodLog
from armada_flyte.pod_runner.pod_secrets import ContainerSecrets, PodSecrets, SecretFile

POD_RUNNER_KINDS = ("process", "docker")


def make_pod_runner(kind: str, **options: object) -> PodRunner:
    """The pod runner called `kind`; options go to its constructor."""
    if kind == "process":
        from armada_flyte.pod_runner.process import ProcessPodRunner

        return ProcessPodRunner(**options)  # type: ignore[arg-type]
    if kind == "docker":
        from armada_flyte.pod_runner.docker import DockerPodRunner

        return DockerPodRunner(**options)  # type: ignore[arg-type]
    raise InvalidConfig("pod_runner", kind, f"use one of {', '.join(POD_RUNNER_KINDS)}")


__all__ = [
    "DEADLINE_MESSAGE",
    "DEADLINE_REASON",
    "POD_RUNNER_KINDS",
    "ContainerEnd",
    "ContainerSecrets",
    "Image",
    "ImageCatalogue",
    "PodEnd",
    "PodLaunch",
    "PodLog",
    "PodRunner",
    "PodSecrets",
    "RunReporter",
    "SecretFile",
    "failed_containers_text",
    "grace_seconds",
    "make_pod_runner",
]
