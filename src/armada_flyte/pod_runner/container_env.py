"""A container's environment as the kubelet builds it from the pod spec, for both runners."""

from __future__ import annotations

from typing import Any, Callable

from armada_flyte.kube import milli
from armada_flyte.pod_runner.model import PodLaunch


def container_env(container: Any, launch: PodLaunch, map_value: Callable[[str], str] = str) -> dict[str, str]:
    """The container's env vars as the kubelet sets them: `envFrom` secrets first, then literal values
    through `map_value`, `fieldRef`s and `resourceFieldRef`s from the pod, `secretKeyRef`s from the
    pod's resolved secrets (an optional one that was missing stays unset, as in Kubernetes), and
    Armada's injected variables where the container sets none."""
    secrets = launch.secrets.of(container.name)
    env = dict(secrets.env_from)
    for var in container.env:
        source = var.valueFrom if var.HasField("valueFrom") else None
        if source is not None and source.HasField("fieldRef"):
            env[var.name] = launch.field_value(source.fieldRef.fieldPath)
        elif source is not None and source.HasField("resourceFieldRef"):
            env[var.name] = resource_field_value(launch.pod, container, source.resourceFieldRef)
        elif source is not None and source.HasField("secretKeyRef"):
            if var.name in secrets.env:
                env[var.name] = secrets.env[var.name]
        else:
            env[var.name] = map_value(var.value)
    for name, value in launch.injected_env.items():
        env.setdefault(name, value)
    return env


def resource_field_value(pod: Any, container: Any, selector: Any) -> str:
    """A `resourceFieldRef`: the container's request or limit divided by the divisor, rounded up (as Kubernetes)."""
    if selector.containerName:
        every = [*pod.initContainers, *pod.containers]
        container = next((c for c in every if c.name == selector.containerName), container)
    kind, _, resource = selector.resource.partition(".")
    quantities = container.resources.limits if kind == "limits" else container.resources.requests
    if resource not in quantities:
        return ""
    divisor = milli(selector.divisor.string) if selector.HasField("divisor") and selector.divisor.string else 1000
    return str(-(-milli(quantities[resource].string) // max(divisor, 1)))
