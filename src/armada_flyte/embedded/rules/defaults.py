"""What Armada's server adds to every job before storing it, with the values of Armada's default config.

Armada validates the request first and then fills in defaults (`internal/server/submit/
conversion/post_process.go`, values from `config/server/config.yaml`), so GetJobDetails'
job spec shows them: a priority class, a 72 h active deadline, a 1 s termination grace period,
cpu, memory and ephemeral storage where a container names none of them, and tolerations.
"""

from __future__ import annotations

import math
from typing import Any

from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

PRIORITY_CLASSES = {"armada-default": False, "armada-preemptible": True, "armada-resilient": False}
"""The priority classes Armada's default config allows, and whether jobs of each can be preempted
(`allowedPriorityClassNames` in config/server/config.yaml; `preemptible` in config/scheduler/config.yaml)."""
DEFAULT_PRIORITY_CLASS = "armada-default"
ACTIVE_DEADLINE_SECONDS = 72 * 3600
MIN_TERMINATION_GRACE_SECONDS = 1
JOB_LIMITS = {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "8Gi"}
TOLERATIONS = (core.Toleration(key="armadaproject.io/armada", operator="Equal", value="true", effect="NoSchedule"),)
TOLERATIONS_BY_PRIORITY_CLASS = {
    name: (core.Toleration(key=f"armadaproject.io/pc-{name}", operator="Equal", value="true", effect="NoSchedule"),)
    for name in ("armada-default", "armada-preemptible")
}
TOLERATIONS_BY_RESOURCE = {
    "nvidia.com/gpu": (
        core.Toleration(key="armadaproject.io/gpu", operator="Equal", value="true", effect="NoSchedule"),
    ),
}
MAX_PRIORITY = 2**32 - 1


def priority_of(requested: float) -> int:
    """Armada keeps priorities as uint32: negatives become 0, the rest round half away from zero
    (`PriorityAsInt32` in internal/server/submit/conversion/conversions.go). Not-a-number becomes 0 and
    infinity the largest uint32, as v0.22.7 stores them (seen on the real-Armada bed)."""
    if math.isnan(requested):
        return 0
    return int(math.floor(min(max(requested, 0.0), MAX_PRIORITY) + 0.5))


def preemptible(pod: Any) -> bool:
    return PRIORITY_CLASSES.get(pod.priorityClassName, False)


def apply_defaults(pod: Any, priority_class: str = DEFAULT_PRIORITY_CLASS) -> None:
    """Fill in, in place and in Armada's order, what the server adds to a pod spec it accepted.

    `priority_class` is the deployment's `submission.defaultPriorityClassName`."""
    if not pod.HasField("activeDeadlineSeconds"):
        pod.activeDeadlineSeconds = ACTIVE_DEADLINE_SECONDS
    if not pod.priorityClassName:
        pod.priorityClassName = priority_class
    for container in list(pod.containers) + list(pod.initContainers):
        _default_resources(container)
    _default_tolerations(pod)
    if pod.terminationGracePeriodSeconds == 0:
        pod.terminationGracePeriodSeconds = MIN_TERMINATION_GRACE_SECONDS


def _default_resources(container: Any) -> None:
    requests, limits = container.resources.requests, container.resources.limits
    for name, quantity in JOB_LIMITS.items():
        if name not in requests and name not in limits:
            requests[name].CopyFrom(resource.Quantity(string=quantity))
            limits[name].CopyFrom(resource.Quantity(string=quantity))


def _default_tolerations(pod: Any) -> None:
    pod.tolerations.extend(TOLERATIONS)
    pod.tolerations.extend(TOLERATIONS_BY_PRIORITY_CLASS.get(pod.priorityClassName, ()))
    requested = {
        name for c in list(pod.containers) + list(pod.initContainers) for name, q in c.resources.requests.items()
    }
    for name in sorted(requested & set(TOLERATIONS_BY_RESOURCE)):
        pod.tolerations.extend(TOLERATIONS_BY_RESOURCE[name])
