"""What a task template decides before any run's identity enters: its spec, its pod, its architecture,
the placement of each step, its secrets, shared memory and resources. The same for every create of a
task, so a plain container's are kept by the template's content without its args."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Optional

from google.protobuf import json_format

from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.submit.accelerators import GPU_RESOURCE, SharedMemory, accelerator_request, shared_memory
from armada_flyte.connector.submit.placement import (
    ImageArchitectures,
    Placement,
    ResolvedArchitecture,
    placement_for,
    resolve_architecture,
)
from armada_flyte.connector.submit.secrets import SecretMounts, secret_mounts
from armada_flyte.connector.submit.template_pod import TemplatePod, container_resources
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import ARCH_LABEL
from armada_flyte.spec import SubmissionSpec

DECLARED_BY_FLYTE = "its flyte.Image platform, at registration"
DECISIONS_CACHED = 256
"""How many templates' decisions are kept (least recently used first out)."""


@dataclass(frozen=True)
class TaskDecisions:
    """What one task template becomes on Armada before a run's identity enters."""

    spec: SubmissionSpec
    pod: TemplatePod
    """Read from the template; for a kept plain container, without its args (each create renders its own)."""
    resolved: ResolvedArchitecture
    placements: tuple[Placement, ...]
    """One per step: the architecture the task runs on first, then, for a preference, each later one's."""
    resources: dict[str, dict[str, str]]
    """The container's requests and limits (equal), GPUs still counted as nvidia.com/gpu."""
    secrets: SecretMounts
    shared_memory: Optional[SharedMemory]
    node_groups: NodeGroups
    """Held, so the id in the cache key stays this object's."""

    @property
    def placement(self) -> Placement:
        return self.placements[0]


_cache: OrderedDict[tuple[Any, ...], TaskDecisions] = OrderedDict()
_cache_lock = threading.Lock()


def task_decisions(
    task_template: Any,
    node_groups: NodeGroups,
    interruptible: bool,
    secret_env_prefix: str,
    image_in_registry: Optional[ImageArchitectures] = None,
) -> TaskDecisions:
    """The task's decisions. Parsing `custom` and the container costs more than the rest of a create, and a
    task's every create repeats it, so a plain container's are kept by the template's content without its
    args (per node groups, capacity class, secrets' env prefix and the registry's answer); a pod template
    (its args sit inside its pod spec) is decided afresh each time. Nothing that raised is kept: the same
    template raises again. The pod kept has no args: the caller renders each create's own."""
    if task_template.HasField("k8s_pod"):
        return decide(task_template, task_template, node_groups, interruptible, secret_env_prefix, image_in_registry)
    without_args = task_template
    if task_template.container.args:
        without_args = type(task_template)()
        without_args.CopyFrom(task_template)
        del without_args.container.args[:]
    key = (
        without_args.SerializeToString(deterministic=True),
        id(node_groups),
        interruptible,
        secret_env_prefix,
        image_in_registry,
    )
    with _cache_lock:
        kept = _cache.get(key)
        if kept is not None:
            _cache.move_to_end(key)
            return kept
    kept = decide(without_args, task_template, node_groups, interruptible, secret_env_prefix, image_in_registry)
    with _cache_lock:
        _cache[key] = kept
        while len(_cache) > DECISIONS_CACHED:
            _cache.popitem(last=False)
    return kept


def decide(
    pod_source: Any,
    task_template: Any,
    node_groups: NodeGroups,
    interruptible: bool,
    secret_env_prefix: str,
    image_in_registry: Optional[ImageArchitectures] = None,
) -> TaskDecisions:
    """Parse and place, uncached: the pod from `pod_source` (the template, or it without its container args)."""
    spec = SubmissionSpec.from_custom(json_format.MessageToDict(task_template.custom))
    pod = TemplatePod.of(pod_source)
    images = []
    if spec.image_architectures:
        images.append(ImageArchitectures(pod.image, spec.image_architectures, DECLARED_BY_FLYTE))
    if image_in_registry is not None:
        images.append(image_in_registry)
    resolved = resolve_architecture(
        spec.architecture, spec.source_of("architecture"), node_groups, pod.pod_spec, images
    )
    _check_gang_stays_on_one_architecture(spec, resolved)
    resources = container_resources(pod.container, spec)
    accelerator = accelerator_request(task_template, resources["requests"].get(GPU_RESOURCE, ""))
    placements = (placement_for(resolved, node_groups, pod.pod_spec, accelerator, interruptible),) + tuple(
        placement_for(replace(resolved, architecture=a), node_groups, pod.pod_spec, accelerator, interruptible)
        for a in resolved.preference[1:]
    )
    security = task_template.security_context if task_template.HasField("security_context") else None
    return TaskDecisions(
        spec,
        pod,
        resolved,
        placements,
        resources,
        secret_mounts(security, secret_env_prefix),
        shared_memory(task_template),
        node_groups,
    )


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
