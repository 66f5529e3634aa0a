"""The one pipeline from a task template to the Armada job it becomes.

custom -> template pod -> architecture -> placement (accelerator, interruptible) -> job request ->
shared memory and the backend's execution context: pure, so `create` and the admin's dry run
submit and print exactly the same job.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
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
from armada_flyte.connector.preference import SpillStep, preference_job_set, spill_step
from armada_flyte.connector.secrets import DEFAULT_ENV_PREFIX, apply_secret_mounts, secret_mounts
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import ARCH_LABEL
from armada_flyte.spec import SubmissionSpec

DECLARED_BY_FLYTE = "its flyte.Image platform, at registration"
DECISIONS_CACHED = 256
"""How many templates' decisions `plan_job` keeps (least recently used first out)."""


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
    spill_jobs: tuple[SpillStep, ...] = ()
    """For a preference: the job for each later architecture, in order, submitted only if the one before
    waited `spill_after` seconds for room and was cancelled."""
    spill_after: float = 0.0

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
    spec, template, resolved, placement, later = _decisions(task_template, node_groups, context, image_in_registry)
    job = build_job_request(template, spec, resolved, placement, identity, output_prefix, blob_store, extra_env)
    security = task_template.security_context if task_template.HasField("security_context") else None
    blob_env = {entry["name"] for entry in blob_store.pod_env()}
    apply_secret_mounts(job.pod_spec, secret_mounts(security, secret_env_prefix), reserved_env=blob_env | set(BLOB_ENV))
    pod_spec = with_accelerator_resource(job.pod_spec, placement.accelerator_resource)
    pod_spec = with_shared_memory(pod_spec, shared_memory(task_template))
    namespace, namespace_source = job_namespace(spec, context, identity, namespace_template)
    job = with_context(replace(job, pod_spec=pod_spec), context, namespace)
    job_set_id = spec.job_set_id or f"flyte-{identity.run or 'local'}"
    if not resolved.preference:
        return JobPlan(spec, template, resolved, placement, job, job_set_id, namespace_source)
    spill_after = spec.spill_after or node_groups.spill_after_seconds
    steps = tuple(spill_step(job, step, n + 1, spec.gang_id) for n, step in enumerate(later))
    job_set_id = preference_job_set(job_set_id, job, spec.gang_id)
    return JobPlan(spec, template, resolved, placement, job, job_set_id, namespace_source, steps, spill_after)


@dataclass(frozen=True)
class _Decisions:
    """What a template decides before any run's identity enters: the same for every create of a task."""

    node_groups: NodeGroups
    """Held, so the id in the cache key stays this object's."""
    spec: SubmissionSpec
    template: TemplatePod
    """Read from the template without its container args (the backend renders them per run)."""
    resolved: ResolvedArchitecture
    placement: Placement
    later: tuple[Placement, ...]


_cache: OrderedDict[tuple[bytes, int, bool], _Decisions] = OrderedDict()
_cache_lock = threading.Lock()


def _decisions(
    task_template: Any,
    node_groups: NodeGroups,
    context: ExecutionContext,
    image_in_registry: Optional[ImageArchitectures],
) -> tuple[SubmissionSpec, TemplatePod, ResolvedArchitecture, Placement, tuple[Placement, ...]]:
    """The task's spec, pod, architecture and placement (and, for a preference, each later architecture's).
    Parsing `custom` and the container costs more than the rest of a create, and a task's every create
    repeats it, so a plain container's decisions are kept by the template's content without its args (per
    node groups and capacity class); a pod template (its args sit inside its pod spec) and a registry's
    answer are decided afresh each time.
    Nothing that raised is kept: the same template raises again."""
    if task_template.HasField("k8s_pod") or image_in_registry is not None:
        return _decide(task_template, task_template, node_groups, context.interruptible, image_in_registry)
    args = list(task_template.container.args)
    without_args = task_template
    if args:
        without_args = type(task_template)()
        without_args.CopyFrom(task_template)
        del without_args.container.args[:]
    key = (without_args.SerializeToString(deterministic=True), id(node_groups), context.interruptible)
    with _cache_lock:
        kept = _cache.get(key)
        if kept is not None:
            _cache.move_to_end(key)
    if kept is None:
        spec, template, resolved, placement, later = _decide(
            without_args, task_template, node_groups, context.interruptible, None
        )
        kept = _Decisions(node_groups, spec, template, resolved, placement, later)
        with _cache_lock:
            _cache[key] = kept
            while len(_cache) > DECISIONS_CACHED:
                _cache.popitem(last=False)
    template = kept.template
    if args:
        template = replace(template, container={**template.container, "args": args})
    return kept.spec, template, kept.resolved, kept.placement, kept.later


def _decide(
    pod_source: Any,
    task_template: Any,
    node_groups: NodeGroups,
    interruptible: bool,
    image_in_registry: Optional[ImageArchitectures],
) -> tuple[SubmissionSpec, TemplatePod, ResolvedArchitecture, Placement, tuple[Placement, ...]]:
    """Parse and place: the pod from `pod_source` (the template, or it without its container args)."""
    spec = SubmissionSpec.from_custom(json_format.MessageToDict(task_template.custom))
    template = TemplatePod.of(pod_source)
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
    placement = placement_for(resolved, node_groups, template.pod_spec, accelerator, interruptible)
    later = tuple(
        placement_for(replace(resolved, architecture=a), node_groups, template.pod_spec, accelerator, interruptible)
        for a in resolved.preference[1:]
    )
    return spec, template, resolved, placement, later


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
