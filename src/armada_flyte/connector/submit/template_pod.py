"""What a task template asks for, read once: its pod (a pod template's, or Flyte's plain container),
its timeouts and its container's resources. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from google.protobuf import json_format

from armada_flyte.errors import InvalidConfig
from armada_flyte.spec import SubmissionSpec

_RESOURCE_NAMES = {1: "cpu", 2: "nvidia.com/gpu", 3: "memory", 5: "ephemeral-storage"}


@dataclass(frozen=True)
class TemplatePod:
    """The pod a task template describes: its pod spec (empty for a plain container), its one
    container, and the pod template's labels and annotations."""

    pod_spec: dict[str, Any]
    container: dict[str, Any]
    labels: dict[str, str]
    annotations: dict[str, str]
    from_pod_template: bool
    timeout_seconds: float = 0.0
    """The task's `timeout` (Flyte's max_runtime: per attempt, while running); 0: none."""
    queued_timeout_seconds: float = 0.0
    """`flyte.Timeout(max_queued_time=...)` (TaskMetadata.timeouts.queued_timeout); 0: none."""

    @property
    def image(self) -> str:
        return self.container["image"]

    @classmethod
    def of(cls, task_template: Any) -> TemplatePod:
        """Read a TaskTemplate's `k8s_pod` (a task with a pod template) or its `container`."""
        task_metadata = task_template.metadata
        timeouts = (
            _duration(task_metadata, "timeout"),
            _duration(task_metadata.timeouts, "queued_timeout") if task_metadata.HasField("timeouts") else 0.0,
        )
        if task_template.HasField("k8s_pod"):
            pod = json_format.MessageToDict(task_template.k8s_pod.pod_spec)
            primary_name = task_template.k8s_pod.primary_container_name or dict(task_template.config).get(
                "primary_container_name", "primary"
            )
            containers = pod.get("containers") or []
            primary = next((c for c in containers if c.get("name") == primary_name), None)
            if primary is None:
                raise InvalidConfig(
                    "pod_template", primary_name, "the pod template has no container with the primary container's name"
                )
            if len(containers) > 1:
                raise InvalidConfig(
                    "pod_template.containers",
                    [c.get("name") for c in containers],
                    "an Armada job runs one container per task; remove the sidecars",
                )
            metadata = task_template.k8s_pod.metadata
            return cls(pod, primary, dict(metadata.labels), dict(metadata.annotations), True, *timeouts)
        if not task_template.HasField("container") or not task_template.container.image:
            raise InvalidConfig(
                "task_template.container.image",
                "",
                "the task has no container image; set image= on the TaskEnvironment",
            )
        container = json_format.MessageToDict(task_template.container, preserving_proto_field_name=True)
        return cls({}, container, {}, {}, False, *timeouts)


def _duration(message: Any, name: str) -> float:
    """A protobuf Duration field in seconds; 0.0 when unset."""
    if not message.HasField(name):
        return 0.0
    value = getattr(message, name)
    return value.seconds + value.nanos / 1e9


def container_resources(container: Mapping[str, Any], spec: SubmissionSpec) -> dict[str, dict[str, str]]:
    """Requests == limits (Armada refuses oversubscription); cpu and memory must be known."""
    values: dict[str, str] = {}
    resources = container.get("resources") or {}
    # Flyte container protos list entries; a pod template's container has k8s maps.
    for kind in ("requests", "limits"):
        entries = resources.get(kind) or []
        if isinstance(entries, Mapping):
            for name, value in entries.items():
                values[name] = value.get("string", value) if isinstance(value, Mapping) else str(value)
            continue
        for entry in entries:
            name = _RESOURCE_NAMES.get(_resource_enum(entry.get("name")))
            if name and entry.get("value"):
                values[name] = str(entry["value"])  # limits come after requests, so they win
    if spec.cpu:
        values["cpu"] = spec.cpu
    if spec.memory:
        values["memory"] = spec.memory
    for needed in ("cpu", "memory"):
        if needed not in values:
            raise InvalidConfig(
                f"resources.{needed}",
                None,
                f"Armada needs {needed} for every job; set flyte.Resources({needed}=...) on the TaskEnvironment "
                f"or ArmadaConfig({needed}=...)",
            )
    return {"requests": dict(values), "limits": dict(values)}


def _resource_enum(name: Any) -> int:
    if isinstance(name, int):
        return name
    return {"CPU": 1, "GPU": 2, "MEMORY": 3, "STORAGE": 4, "EPHEMERAL_STORAGE": 5}.get(str(name), 0)
