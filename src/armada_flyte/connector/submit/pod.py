"""One step's Armada job, built in one pass from the task's decisions and the attempt's context.

Flyte renders the task into a container whose args start with `a0`; the connector does not invent a
command: it wraps that container into a pod, fills the runtime placeholders a backend leaves in the
args, and gives the pod, in this order of precedence, its env (the template's, the backend's, the
attempt number, the blob store's, the task's secrets), its volumes (the template's, the secrets',
shared memory), its resources (GPUs counted in the accelerator's resource), its placement and the
backend's service account; then the labels and annotations (the backend's under the template's under
the connector's). Pure: every value is made here once, none is edited after.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

from armada_flyte.armada_names import GANG_CARDINALITY, GANG_ID, GANG_UNIFORMITY_LABEL
from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.model.identity import DEFAULT_ORG, RunIdentity
from armada_flyte.connector.model.job_request import (
    ANNOTATION_ANY_OF,
    ANNOTATION_ARCH_SOURCE,
    ANNOTATION_EXTERNAL_JOB_URI,
    ANNOTATION_FLYTE_ACTION,
    ANNOTATION_FLYTE_DOMAIN,
    ANNOTATION_FLYTE_PROJECT,
    ANNOTATION_FLYTE_RUN,
    ANNOTATION_NODE_GROUP,
    ANNOTATION_OUTPUTS,
    ANNOTATION_TASK,
    LABEL_ACTION,
    LABEL_ARCH,
    LABEL_CONNECTOR,
    LABEL_DOMAIN,
    LABEL_PROJECT,
    LABEL_RUN,
    JobRequest,
)
from armada_flyte.connector.submit.accelerators import GPU_RESOURCE, counted_in, shared_memory_entries
from armada_flyte.connector.submit.decisions import TaskDecisions
from armada_flyte.connector.submit.execution_context import ExecutionContext, service_account
from armada_flyte.connector.submit.placement import Placement
from armada_flyte.connector.submit.secrets import check_secret_mounts, secret_key_ref
from armada_flyte.kube import ARCH_LABEL, label_value

CONTAINER_NAME = "armada-task"
ATTEMPT_ENV = "FLYTE_ATTEMPT_NUMBER"
BLOB_ENV = ("FLYTE_AWS_ENDPOINT", "FLYTE_AWS_ACCESS_KEY_ID", "FLYTE_AWS_SECRET_ACCESS_KEY")
"""What a0 reads the S3 endpoint and keys from."""
_FORBIDDEN_POD_ENV = ("FLYTE_STORAGE_RETRIES",)
"""Never reaches a pod (it breaks obstore)."""


def job_request(
    task: TaskDecisions, step: int, args: list[str], context: ExecutionContext, blob: BlobSettings, namespace: str
) -> JobRequest:
    """The job of the task's `step` (0: the one create submits; a preference's later ones differ only in
    their placement, their client id and, for a gang, the gang's id). `args`: the container's args as the
    template carries them; `namespace` is the job's (`job_namespace`)."""
    placement, identity = task.placements[step], context.identity
    args = runtime_args(args, identity, context.output_prefix)
    out_path = outputs_path(args)
    client_id = identity.client_id(out_path or context.output_prefix)
    gang_id = _gang_id(task, identity)
    if step:
        assert placement.architecture is not None, "a preference's steps are each one architecture"
        client_id = f"{client_id}-{step}{placement.architecture.value}"
        gang_id = gang_id and f"{gang_id}-{placement.architecture.value}"
    return JobRequest(
        pod_spec=_pod_spec(task, placement, args, context, blob),
        labels=_labels(task, placement, context),
        annotations=_annotations(task, placement, context, out_path, gang_id),
        namespace=namespace,
        priority=task.spec.priority,
        client_id=client_id,
        outputs_path=out_path,
        gang_id=gang_id,
        external_job_uri=identity.external_job_uri(),
    )


def _pod_spec(
    task: TaskDecisions, placement: Placement, args: list[str], context: ExecutionContext, blob: BlobSettings
) -> dict[str, Any]:
    """The template's pod spec with the one container, the volumes, the deadline, the placement and the
    service account. A pod template's container keeps everything it declares (ports, securityContext,
    envFrom, ...); Flyte's plain container proto has nothing more to keep."""
    template, secrets = task.pod, task.secrets
    source = template.container
    store = blob_env(blob)
    env = _env(source, context, store)
    mounts = list(source.get("volumeMounts") or [])
    volumes = list(template.pod_spec.get("volumes") or [])
    check_secret_mounts(secrets, {e["name"] for e in store} | set(BLOB_ENV), mounts, volumes)
    if secrets:
        names = {entry["name"] for entry in secrets.env}
        env = [e for e in env if e["name"] not in names] + list(secrets.env)
    if secrets.volumes:
        mounts += secrets.volume_mounts
        volumes += secrets.volumes
    if task.shared_memory is not None:
        volume, mount = shared_memory_entries(task.shared_memory, volumes, mounts)
        volumes.append(volume)
        mounts.append(mount)

    container: dict[str, Any] = dict(source) if template.from_pod_template else {}
    container.update(
        name=source.get("name") or CONTAINER_NAME,
        image=source["image"],
        args=args,
        env=env,
        imagePullPolicy=source.get("imagePullPolicy", "IfNotPresent"),
        resources=_resources(task.resources, placement.accelerator_resource),
    )
    if source.get("command"):
        container["command"] = list(source["command"])
    if mounts:
        container["volumeMounts"] = mounts

    pod_spec = {k: v for k, v in template.pod_spec.items() if k != "containers"}
    pod_spec["containers"] = [container]
    pod_spec["restartPolicy"] = "Never"
    if template.timeout_seconds > 0:
        # Kubernetes ends the pod at the task's timeout even when no connector polls; the
        # connector also fails the attempt once its run is over the limit.
        limit = max(1, math.ceil(template.timeout_seconds))
        pod_spec["activeDeadlineSeconds"] = min(limit, int(pod_spec.get("activeDeadlineSeconds") or limit))
    if volumes:
        pod_spec["volumes"] = volumes
    if account := service_account(template.pod_spec, context):
        pod_spec["serviceAccountName"] = account
    return placement.apply_to(pod_spec)


def _env(source: Mapping[str, Any], context: ExecutionContext, store: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The template's env, the backend's, the attempt number (what Flyte's pod plugin gives every pod;
    flyte.ctx().attempt_number reads it), then the blob store's (`store`: `blob_env`), each replacing
    same-named ones before it."""
    env = [_env_entry(e) for e in source.get("env") or []]
    env += [{"name": name, "value": value} for name, value in context.env.items()]
    env = [e for e in env if e["name"] != ATTEMPT_ENV] + [{"name": ATTEMPT_ENV, "value": str(context.identity.attempt)}]
    overridden = {e["name"] for e in store} | set(_FORBIDDEN_POD_ENV)
    return [e for e in env if e["name"] not in overridden] + store


def _resources(resources: dict[str, dict[str, str]], accelerator_resource: str) -> dict[str, dict[str, str]]:
    """Requests == limits (Armada refuses oversubscription), GPUs counted in the accelerator's resource."""
    if accelerator_resource != GPU_RESOURCE:
        return counted_in(resources, accelerator_resource)
    return {kind: dict(values) for kind, values in resources.items()}


def _labels(task: TaskDecisions, placement: Placement, context: ExecutionContext) -> dict[str, str]:
    """The backend's labels, then the pod template's, then the connector's own."""
    identity = context.identity
    labels = dict(context.labels)
    labels.update((k, label_value(v)) for k, v in task.pod.labels.items())
    labels[LABEL_CONNECTOR] = "armada"
    for key, value in (
        (LABEL_PROJECT, identity.project),
        (LABEL_DOMAIN, identity.domain),
        (LABEL_RUN, identity.run),
        (LABEL_ACTION, identity.action),
    ):
        if value:
            labels[key] = label_value(value)
    if placement.architecture is not None:
        labels[LABEL_ARCH] = placement.architecture.value
    elif placement.any_of:
        labels[LABEL_ARCH] = "any"
    return labels


def _annotations(
    task: TaskDecisions, placement: Placement, context: ExecutionContext, out_path: str, gang_id: Optional[str]
) -> dict[str, str]:
    """The backend's annotations, then the pod template's, then the connector's own and the gang's."""
    identity = context.identity
    annotations = dict(context.annotations)
    annotations.update(task.pod.annotations)
    for key, value in (
        (ANNOTATION_FLYTE_PROJECT, identity.project),
        (ANNOTATION_FLYTE_DOMAIN, identity.domain),
        (ANNOTATION_FLYTE_RUN, identity.run),
        (ANNOTATION_FLYTE_ACTION, identity.action),
    ):
        if value:
            annotations[key] = value
    annotations[ANNOTATION_ARCH_SOURCE] = task.resolved.source
    annotations[ANNOTATION_OUTPUTS] = out_path
    if identity.task:
        annotations[ANNOTATION_TASK] = identity.task
    if external_job_uri := identity.external_job_uri():
        annotations[ANNOTATION_EXTERNAL_JOB_URI] = external_job_uri
    if placement.architecture is not None:
        annotations[ANNOTATION_NODE_GROUP] = placement.node_group or ""
    if task.resolved.any_of:
        annotations[ANNOTATION_ANY_OF] = ",".join(a.value for a in task.resolved.any_of)
    if gang_id:
        spec = task.spec
        annotations[GANG_ID] = gang_id
        annotations[GANG_CARDINALITY] = str(spec.gang_cardinality)
        # Always a uniformity label: with the arch label, Armada itself keeps the gang on one
        # architecture, even when members were submitted by different connector replicas.
        annotations[GANG_UNIFORMITY_LABEL] = spec.gang_node_uniformity_label or ARCH_LABEL
    return annotations


def _gang_id(task: TaskDecisions, identity: RunIdentity) -> Optional[str]:
    """The gang's id for this run (a gang of one is no gang)."""
    spec = task.spec
    if not spec.gang_id or (spec.gang_cardinality or 1) < 2:
        return None
    return f"{spec.gang_id}-{identity.run}" if identity.run else spec.gang_id


def blob_env(blob: BlobSettings) -> list[dict[str, Any]]:
    """What a0 reads the blob store from: its endpoint, and the keys from a Kubernetes Secret by reference
    (none with workload identity: the pod's service account grants access); nothing without an endpoint."""
    if not blob.endpoint:
        return []
    env: list[dict[str, Any]] = [{"name": BLOB_ENV[0], "value": blob.endpoint}]
    if blob.workload_identity or not blob.credentials_secret:
        return env
    for name, key in zip(BLOB_ENV[1:], (blob.access_key_key, blob.secret_key_key)):
        env.append({"name": name, "valueFrom": secret_key_ref(blob.credentials_secret, key)})
    return env


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
