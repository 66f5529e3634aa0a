"""Build the Armada pod spec from Flyte's rendered task container. Pure: no I/O.

Flyte renders the task into a container whose args start with `a0`; the connector does not
invent a command, it wraps that container into a pod, fills the runtime placeholders a backend
leaves in the args, gives the pod the blob-store settings a0 needs, and adds the placement.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from google.protobuf import json_format

from armada_flyte.armada_names import GANG_CARDINALITY, GANG_ID, GANG_UNIFORMITY_LABEL
from armada_flyte.connector.blob import BlobSettings
from armada_flyte.connector.placement import Placement, ResolvedArchitecture
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import ARCH_LABEL, label_value
from armada_flyte.spec import SubmissionSpec

CONTAINER_NAME = "armada-task"
DEFAULT_ORG = "default"
"""The `--org` given to a0 when Flyte's metadata names none (a0 requires one)."""

LABEL_CONNECTOR = "flyte.org/connector"
LABEL_PROJECT = "flyte.org/project"
LABEL_DOMAIN = "flyte.org/domain"
LABEL_RUN = "flyte.org/run"
LABEL_ACTION = "flyte.org/action"
LABEL_ARCH = "armada-flyte.io/architecture"
ANNOTATION_ARCH_SOURCE = "armada-flyte.io/architecture-source"
ANNOTATION_NODE_GROUP = "armada-flyte.io/node-group"
ANNOTATION_ANY_OF = "armada-flyte.io/architectures"
"""For `architecture="any"`: the architectures the job may run on, comma-separated."""
ANNOTATION_OUTPUTS = "armada-flyte.io/outputs-path"
ANNOTATION_TASK = "armada-flyte.io/task"
ANNOTATION_FLYTE_PROJECT = "armada-flyte.io/flyte-project"
ANNOTATION_FLYTE_DOMAIN = "armada-flyte.io/flyte-domain"
ANNOTATION_FLYTE_RUN = "armada-flyte.io/flyte-run"
ANNOTATION_FLYTE_ACTION = "armada-flyte.io/flyte-action"
"""The run's identity exactly as Flyte spells it (labels must be sanitised, annotations need not be),
for links from Lookout back to the Flyte run (deploy/lookout/job-links.yaml)."""

ATTEMPT_ENV = "FLYTE_ATTEMPT_NUMBER"
ANNOTATION_EXTERNAL_JOB_URI = "armadaproject.io/externalJobUri"
"""Armada's legacy spelling of `external_job_uri`, which Armada's Airflow operator sets; kept
beside the field so the URI shows in the job's annotations (GetJobDetails, Lookout) too."""

# FLYTE_STORAGE_RETRIES must never reach a pod (it breaks obstore).
_FORBIDDEN_POD_ENV = ("FLYTE_STORAGE_RETRIES",)

_RESOURCE_NAMES = {1: "cpu", 2: "nvidia.com/gpu", 3: "memory", 5: "ephemeral-storage"}


@dataclass(frozen=True)
class RunIdentity:
    """Which Flyte run, action and attempt a job belongs to."""

    org: str = ""
    project: str = ""
    domain: str = ""
    run: str = ""
    action: str = ""
    attempt: int = 0
    task: str = ""

    @classmethod
    def from_metadata(cls, metadata: Any, task_name: str = "") -> RunIdentity:
        """Read it from Flyte's TaskExecutionMetadata (missing in local runs: fields stay empty)."""
        if metadata is None or not metadata.HasField("task_execution_id"):
            return cls(task=task_name)
        tid = metadata.task_execution_id
        execution = tid.node_execution_id.execution_id
        return cls(
            org=execution.org or tid.task_id.org or dict(metadata.labels).get("organization", ""),
            project=execution.project or tid.task_id.project,
            domain=execution.domain or tid.task_id.domain,
            run=execution.name,
            action=tid.node_execution_id.node_id,
            attempt=tid.retry_attempt,
            task=task_name or tid.task_id.name,
        )

    def external_job_uri(self) -> str:
        """`flyte://org/project/domain/run/action/attempt`: finds the job from Flyte's identity
        (Armada's GetJobStatusUsingExternalJobUri); empty when the run is not known."""
        if not self.run:
            return ""
        parts = (self.org or DEFAULT_ORG, self.project, self.domain, self.run, self.action, str(self.attempt))
        return "flyte://" + "/".join(parts)

    def client_id(self, outputs_path: str) -> str:
        """Deterministic Armada client_id (<= 100 chars): a retried CreateTask reattaches, never resubmits."""
        key = "|".join([self.org, self.project, self.domain, self.run, self.action, str(self.attempt), outputs_path])
        return "flyte-" + hashlib.sha256(key.encode()).hexdigest()[:48]


@dataclass(frozen=True)
class JobRequest:
    """One Armada job item, as plain data; the client wrapper turns it into protos."""

    pod_spec: dict[str, Any]
    labels: dict[str, str]
    annotations: dict[str, str]
    namespace: str
    priority: float
    client_id: str
    outputs_path: str
    gang_id: Optional[str] = None
    extra: dict[str, Any] = field(default_factory=dict)
    external_job_uri: str = ""


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


def runtime_args(args: list[str], identity: RunIdentity, output_prefix: str) -> list[str]:
    """Fill the placeholders no propeller fills for a connector, and add what a0 requires.

    Each step is conditional, so already-complete args (local runs) pass unchanged; args that
    don't start with `a0` (a plain container) only get the placeholders filled.
    """
    filled = [
        arg.replace("{{.runName}}", identity.run or "local").replace("{{.actionName}}", identity.action or "a0")
        for arg in args
    ]
    if not filled or filled[0] != "a0":
        return filled
    if "--run-base-dir" not in filled:
        base = output_prefix.rstrip("/")
        filled[1:1] = ["--run-base-dir", base]
    # a0 insists on an org; open-source backends often have none, so a stand-in is given.
    for flag, value in (
        ("--org", identity.org or DEFAULT_ORG),
        ("--project", identity.project),
        ("--domain", identity.domain),
    ):
        if flag not in filled and value:
            filled[1:1] = [flag, value]
    return filled


def outputs_path(args: list[str]) -> str:
    """The per-action folder a0 writes outputs.pb / error.pb to (the `--outputs-path` value)."""
    for index, arg in enumerate(args[:-1]):
        if arg == "--outputs-path":
            return args[index + 1]
    return ""


def _env_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Flyte's `{key, value}` pairs become `{name, value}`; Kubernetes entries (with `valueFrom`) stay whole."""
    if "key" in entry and "name" not in entry:
        return {"name": entry["key"], "value": entry.get("value", "")}
    return dict(entry)


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


def build_job_request(
    template: TemplatePod,
    spec: SubmissionSpec,
    resolved: ResolvedArchitecture,
    placement: Placement,
    identity: RunIdentity,
    output_prefix: str,
    blob_store: BlobSettings,
    extra_env: Mapping[str, str] | None = None,
) -> JobRequest:
    """Everything Armada needs for one task, as plain data."""
    container = template.container
    args = runtime_args(list(container.get("args") or []), identity, output_prefix)
    out_path = outputs_path(args)
    env = [_env_entry(e) for e in container.get("env") or []]
    env += [{"name": name, "value": value} for name, value in (extra_env or {}).items()]
    # What Flyte's pod plugin gives every pod; flyte.ctx().attempt_number reads it.
    env = [e for e in env if e["name"] != ATTEMPT_ENV] + [{"name": ATTEMPT_ENV, "value": str(identity.attempt)}]
    blob_env = blob_store.pod_env()
    overridden = {e["name"] for e in blob_env} | set(_FORBIDDEN_POD_ENV)
    env = [e for e in env if e["name"] not in overridden] + blob_env

    # A pod template's container keeps everything it declares (volumeMounts, ports,
    # securityContext, envFrom, ...); Flyte's plain container proto has nothing more to keep.
    pod_container: dict[str, Any] = dict(container) if template.from_pod_template else {}
    pod_container.update(
        name=container.get("name") or CONTAINER_NAME,
        image=container["image"],
        args=args,
        env=env,
        imagePullPolicy=container.get("imagePullPolicy", "IfNotPresent"),
        resources=container_resources(container, spec),
    )
    if container.get("command"):
        pod_container["command"] = list(container["command"])
    pod_spec = {k: v for k, v in template.pod_spec.items() if k != "containers"}
    pod_spec["containers"] = [pod_container]
    pod_spec["restartPolicy"] = "Never"
    if template.timeout_seconds > 0:
        # Kubernetes ends the pod at the task's timeout even when no connector polls; the
        # connector also fails the attempt once its run is over the limit.
        limit = max(1, math.ceil(template.timeout_seconds))
        pod_spec["activeDeadlineSeconds"] = min(limit, int(pod_spec.get("activeDeadlineSeconds") or limit))
    pod_spec = placement.apply_to(pod_spec)

    labels = {k: label_value(v) for k, v in template.labels.items()}
    labels[LABEL_CONNECTOR] = "armada"
    for key, value in (
        (LABEL_PROJECT, identity.project),
        (LABEL_DOMAIN, identity.domain),
        (LABEL_RUN, identity.run),
        (LABEL_ACTION, identity.action),
    ):
        if value:
            labels[key] = label_value(value)
    annotations = dict(template.annotations)
    for key, value in (
        (ANNOTATION_FLYTE_PROJECT, identity.project),
        (ANNOTATION_FLYTE_DOMAIN, identity.domain),
        (ANNOTATION_FLYTE_RUN, identity.run),
        (ANNOTATION_FLYTE_ACTION, identity.action),
    ):
        if value:
            annotations[key] = value
    annotations[ANNOTATION_ARCH_SOURCE] = resolved.source
    annotations[ANNOTATION_OUTPUTS] = out_path
    if identity.task:
        annotations[ANNOTATION_TASK] = identity.task
    external_job_uri = identity.external_job_uri()
    if external_job_uri:
        annotations[ANNOTATION_EXTERNAL_JOB_URI] = external_job_uri
    if placement.architecture is not None:
        labels[LABEL_ARCH] = placement.architecture.value
        annotations[ANNOTATION_NODE_GROUP] = placement.node_group or ""
    elif placement.any_of:
        labels[LABEL_ARCH] = "any"
    if resolved.any_of:
        annotations[ANNOTATION_ANY_OF] = ",".join(a.value for a in resolved.any_of)

    gang_id = None
    if spec.gang_id and (spec.gang_cardinality or 1) >= 2:
        gang_id = f"{spec.gang_id}-{identity.run}" if identity.run else spec.gang_id
        annotations[GANG_ID] = gang_id
        annotations[GANG_CARDINALITY] = str(spec.gang_cardinality)
        # Always a uniformity label: with the arch label, Armada itself keeps the gang on one
        # architecture, even when members were submitted by different connector replicas.
        annotations[GANG_UNIFORMITY_LABEL] = spec.gang_node_uniformity_label or ARCH_LABEL

    return JobRequest(
        pod_spec=pod_spec,
        labels=labels,
        annotations=annotations,
        namespace=spec.namespace,
        priority=spec.priority,
        client_id=identity.client_id(out_path or output_prefix),
        outputs_path=out_path,
        gang_id=gang_id,
        external_job_uri=external_job_uri,
    )
