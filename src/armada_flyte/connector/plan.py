"""The one pipeline from a task template to the Armada job it becomes.

custom -> template pod -> architecture -> placement (accelerator, interruptible) -> job request ->
shared memory and the backend's execution context: pure, so `create` and the admin's dry run
submit and print exactly the same job.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional

from google.protobuf import json_format

from armada_flyte.connector.accelerators import (
    GPU_RESOURCE,
    accelerator_request,
    shared_memory,
    with_accelerator_resource,
    with_shared_memory,
)
from armada_flyte.connector.blob import BLOB_ENV, BlobSettings
from armada_flyte.connector.execution_context import ExecutionContext, job_namespace, with_context
from armada_flyte.connector.node_groups import NodeGroups
from armada_flyte.connector.placement import (
    ImageArchitectures,
    Placement,
    ResolvedArchitecture,
    placement_for,
    resolve_architecture,
)
from armada_flyte.connector.pod import JobRequest, RunIdentity, TemplatePod, build_job_request, container_resources
from armada_flyte.connector.secrets import DEFAULT_ENV_PREFIX, apply_secret_mounts, secret_mounts
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import ARCH_LABEL
from armada_flyte.spec import SubmissionSpec

DECLARED_BY_FLYTE = "its flyte.Image platform, at registration"


@dataclass(frozen=True)
class JobPlan:
    """What one task template becomes on Armada, and the decisions that shaped it."""

    spec: SubmissionSpec
    template: TemplatePod
    resolved: ResolvedArchitecture
    placement: Placement
    job: JobRequest
    job_set_id: str
    namespace_source: str = "default"
    """Who chose the job's namespace: task / env / project (ArmadaConfig), admin, backend, or default."""

    @property
    def architecture(self) -> str:
        return self.placement.architecture.value if self.placement.architecture else ""

    @property
    def any_of(self) -> str:
        """For `any`: the architectures it may run on, comma-separated (also when narrowed to one)."""
        return ",".join(a.value for a in self.resolved.any_of)


def plan_job(
    task_template: Any,
    node_groups: NodeGroups,
    identity: RunIdentity,
    output_prefix: str,
    blob_store: BlobSettings,
    extra_env: Optional[Mapping[str, str]] = None,
    *,
    secret_env_prefix: str = DEFAULT_ENV_PREFIX,
    context: Optional[ExecutionContext] = None,
    namespace_template: Optional[str] = None,
    image_in_registry: Optional[ImageArchitectures] = None,
) -> JobPlan:
    """Resolve and place the task, and build its job request. Raises the typed errors of each step.

    `context` is the backend's execution metadata (None: a local run, read from the template alone).
    `image_in_registry`: for `architecture="any"`, the image's architectures as its registry lists them.
    """
    context = context or ExecutionContext.of(None, task_template)
    spec = SubmissionSpec.from_custom(json_format.MessageToDict(task_template.custom))
    template = TemplatePod.of(task_template)
    images = []
    if spec.image_architectures:
        images.append(ImageArchitectures(template.image, spec.image_architectures, DECLARED_BY_FLYTE))
    if image_in_registry is not None:
        images.append(image_in_registry)
    resolved = resolve_architecture(
        spec.architecture, spec.source_of("architecture"), node_groups, template.pod_spec, images
    )
    _check_gang_stays_on_one_architecture(spec, resolved)
    gpus = container_resources(template.container, spec)["requests"].get(GPU_RESOURCE, "")
    accelerator = accelerator_request(task_template, gpus)
    placement = placement_for(resolved, node_groups, template.pod_spec, accelerator, context.interruptible)
    job = build_job_request(template, spec, resolved, placement, identity, output_prefix, blob_store, extra_env)
    security = task_template.security_context if task_template.HasField("security_context") else None
    blob_env = {entry["name"] for entry in blob_store.pod_env()}
    apply_secret_mounts(job.pod_spec, secret_mounts(security, secret_env_prefix), reserved_env=blob_env | set(BLOB_ENV))
    pod_spec = with_accelerator_resource(job.pod_spec, placement.accelerator_resource)
    pod_spec = with_shared_memory(pod_spec, shared_memory(task_template))
    namespace, namespace_source = job_namespace(spec, context, identity, namespace_template)
    job = with_context(replace(job, pod_spec=pod_spec), context, namespace)
    job_set_id = spec.job_set_id or f"flyte-{identity.run or 'local'}"
    return JobPlan(spec, template, resolved, placement, job, job_set_id, namespace_source)


def _check_gang_stays_on_one_architecture(spec: SubmissionSpec, resolved: ResolvedArchitecture) -> None:
    """Only the architecture label as the gang's uniformity label keeps `any` members on one architecture."""
    label = spec.gang_node_uniformity_label
    if resolved.several and spec.gang_id and (spec.gang_cardinality or 1) >= 2 and label and label != ARCH_LABEL:
        raise InvalidConfig(
            "ArmadaConfig.gang_node_uniformity_label",
            label,
            f"a gang with architecture 'any' stays on one architecture only through the uniformity label "
            f"{ARCH_LABEL} (Armada takes one label); leave it unset, or pin the gang to one architecture",
        )
