"""Where a pod goes: resolve the architecture, then turn it, the accelerator and the task's
interruptibility into scheduling constraints and an Armada priority class.

Pure functions over plain data (pod-spec dicts in Kubernetes' camelCase shape), so every rule is
testable without a server.

Just over 400 lines on purpose: the architecture, accelerator and interruptibility rules meet in one
pod spec and check each other (a GPU node group must offer the architecture, a pod template's selector
must agree); split apart, each part would need the others' constraints.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from armada_flyte.architecture import ANY, Architecture, ArchitectureRequest, is_preference, sorted_architectures
from armada_flyte.connector.config.node_groups import DEVICE_CLASS_RESOURCES, Constraints, NodeGroup, NodeGroups
from armada_flyte.connector.submit.accelerators import GPU_RESOURCE, AcceleratorRequest
from armada_flyte.errors import (
    AcceleratorNotOffered,
    ArchitectureConflict,
    ArchitectureNotOffered,
    InvalidConfig,
    NoCommonArchitecture,
)
from armada_flyte.kube import ARCH_LABEL
from armada_flyte.kube_objects import MatchExpression, Toleration


@dataclass(frozen=True)
class ImageArchitectures:
    """What is known of the architectures a task's image is built for, and how it is known."""

    image: str
    architectures: tuple[Architecture, ...]
    known_by: str
    """e.g. "its flyte.Image platform" or "its registry"."""
    fallback: str = ""
    """Set when these are not the image's but the admin's fallback architecture: why the fallback was used."""


@dataclass(frozen=True)
class ResolvedArchitecture:
    """The architecture a task runs on (None: no arch constraint, or several) and who decided it."""

    architecture: Optional[Architecture]
    source: str
    """task, env, project (baked in at serialisation), pod_template, platform, or none."""
    any_of: tuple[Architecture, ...] = ()
    """For `architecture="any"`: every architecture the task may run on (one: it is `architecture`)."""
    narrowed_by: tuple[str, ...] = ()
    """For `any` or a preference: what narrowed the architectures (the platform, the image, the pod template)."""
    preference: tuple[Architecture, ...] = ()
    """For a preference left with two or more architectures: them in order (`architecture` is the first)."""

    @property
    def several(self) -> bool:
        """Placement asks Armada for any of two or more architectures."""
        return len(self.any_of) > 1


@dataclass(frozen=True)
class Placement:
    """Scheduling constraints for one pod, merged with what its pod template already asked for."""

    architecture: Optional[Architecture]
    node_group: Optional[str]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    affinity: Optional[dict[str, Any]] = None
    accelerator: str = ""
    """The accelerator entry the pod was placed by (empty: none, or a GPU count alone)."""
    accelerator_resource: str = GPU_RESOURCE
    priority_class: str = ""
    """Armada priority class the task gets (empty: Armada's default); a pod template's own wins."""
    any_of: tuple[Architecture, ...] = ()
    """For `any` on several architectures: the ones the constraints allow (`architecture` is then None)."""

    def apply_to(self, pod_spec: dict[str, Any]) -> dict[str, Any]:
        """A copy of `pod_spec` carrying these constraints."""
        out = dict(pod_spec)
        out.pop("nodeSelector", None)
        out.pop("tolerations", None)
        out.pop("affinity", None)
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        if self.affinity:
            out["affinity"] = copy.deepcopy(self.affinity)
        if self.priority_class and not out.get("priorityClassName"):
            out["priorityClassName"] = self.priority_class
        return out


def pinned_architecture(pod_spec: Mapping[str, Any] | None) -> Optional[Architecture]:
    """The architecture a pod template already pins, by nodeSelector or required node affinity."""
    if not pod_spec:
        return None
    selected = (pod_spec.get("nodeSelector") or {}).get(ARCH_LABEL)
    if selected:
        return Architecture.parse(selected, f"pod_template nodeSelector {ARCH_LABEL}")
    allowed = _affinity_arch_values(pod_spec)
    if allowed is not None and len(allowed) == 1:
        return Architecture.parse(next(iter(allowed)), f"pod_template affinity {ARCH_LABEL}")
    return None


def resolve_architecture(
    task_architecture: Optional[ArchitectureRequest],
    task_source: str,
    node_groups: NodeGroups,
    pod_spec: Mapping[str, Any] | None = None,
    images: Sequence[ImageArchitectures] = (),
) -> ResolvedArchitecture:
    """Task value (incl. project defaults baked in) > pod template's pin > admin default > none.

    `any` becomes the platform's architectures narrowed by what is known of the image (`images`) and
    by the pod template's own architecture rule.
    """
    if task_architecture == ANY:
        return _resolve_any(task_source, node_groups, pod_spec or {}, images)
    if is_preference(task_architecture):
        return _resolve_preference(task_architecture, task_source, node_groups, pod_spec or {}, images)
    if isinstance(task_architecture, Architecture):
        return ResolvedArchitecture(task_architecture, task_source)
    pinned = pinned_architecture(pod_spec)
    if pinned is not None:
        return ResolvedArchitecture(pinned, "pod_template")
    if node_groups.architecture_preference:
        preference = tuple(node_groups.architecture_preference)
        return _resolve_preference(preference, "platform", node_groups, pod_spec or {}, images)
    if node_groups.default_architecture is not None:
        return ResolvedArchitecture(node_groups.default_architecture, "platform")
    return ResolvedArchitecture(None, "none")


def _resolve_any(
    source: str, node_groups: NodeGroups, pod_spec: Mapping[str, Any], images: Sequence[ImageArchitectures]
) -> ResolvedArchitecture:
    allowed, narrowed_by = _narrowed(list(node_groups.architectures), ANY, source, node_groups, pod_spec, images)
    any_of = sorted_architectures(allowed)
    return ResolvedArchitecture(any_of[0] if len(any_of) == 1 else None, source, any_of, tuple(narrowed_by))


def _resolve_preference(
    preference: Sequence[Architecture],
    source: str,
    node_groups: NodeGroups,
    pod_spec: Mapping[str, Any],
    images: Sequence[ImageArchitectures],
) -> ResolvedArchitecture:
    """The preference narrowed as `any` is, its order kept: one left is pinned, none is refused."""
    asked = "[" + ", ".join(a.value for a in preference) + "]"
    offered = [a for a in preference if a in node_groups.architectures]
    narrowed_by = [f"the platform (offers {', '.join(node_groups.offered)})"] if len(offered) < len(preference) else []
    if not offered:
        raise ArchitectureNotOffered(asked, node_groups.offered, source)
    allowed, more = _narrowed(offered, asked, source, node_groups, pod_spec, images)
    narrowed_by += more
    if len(allowed) == 1:
        return ResolvedArchitecture(allowed[0], source, narrowed_by=tuple(narrowed_by))
    return ResolvedArchitecture(allowed[0], source, narrowed_by=tuple(narrowed_by), preference=tuple(allowed))


def _narrowed(
    allowed: list[Architecture],
    asked: str,
    source: str,
    node_groups: NodeGroups,
    pod_spec: Mapping[str, Any],
    images: Sequence[ImageArchitectures],
) -> tuple[list[Architecture], list[str]]:
    """`allowed` (in its order) less what the images lack and the pod template's architecture rule excludes."""
    narrowed_by: list[str] = []
    for known in images:
        narrowed = [a for a in allowed if a in known.architectures]
        if not narrowed:
            offered = node_groups.offered if asked == ANY else [a.value for a in allowed]
            raise NoCommonArchitecture(
                known.image, [a.value for a in known.architectures], offered, source, known.known_by, asked
            )
        if narrowed != allowed:
            narrowed_by.append(f"image {known.image} ({known.known_by}: {_names(known.architectures)})")
        allowed = narrowed
    own = _pod_template_architectures(pod_spec)
    if own is not None:
        narrowed = [a for a in allowed if a in own]
        if not narrowed:
            raise ArchitectureConflict(
                f"the task asks for architecture {asked!r} (set by {source}), which here means {_names(allowed)}, "
                f"but its pod template allows only {_names(own)} by its {ARCH_LABEL} rule. Remove that rule from "
                "the pod template, or set ArmadaConfig(architecture=...) to one architecture."
            )
        if narrowed != allowed:
            narrowed_by.append(f"the pod template ({_names(own)})")
        allowed = narrowed
    return allowed, narrowed_by


def _pod_template_architectures(pod_spec: Mapping[str, Any]) -> Optional[set[Architecture]]:
    pinned = pinned_architecture(pod_spec)
    if pinned is not None:
        return {pinned}
    values = _affinity_arch_values(pod_spec)
    if values is None:
        return None
    return {a for a in Architecture if a.value in values}


def _names(architectures: Any) -> str:
    return ", ".join(a.value for a in sorted_architectures(architectures)) or "none"


def placement_for(
    resolved: ResolvedArchitecture,
    node_groups: NodeGroups,
    pod_spec: Mapping[str, Any] | None = None,
    accelerator: Optional[AcceleratorRequest] = None,
    interruptible: Optional[bool] = None,
) -> Placement:
    """Constraints that put the pod on `resolved`'s node group and its accelerator's nodes, keeping
    the pod template's own. `interruptible` None (the connector's callers always know) adds no class.

    Raises `ArchitectureNotOffered` / `AcceleratorNotOffered` for what the platform lacks, and
    `ArchitectureConflict` when the pod template pins a different architecture.
    """
    pod_spec = pod_spec or {}
    selector = dict(pod_spec.get("nodeSelector") or {})
    tolerations = [dict(t) for t in pod_spec.get("tolerations") or []]
    affinity = copy.deepcopy(pod_spec.get("affinity")) or None
    architecture, node_group = resolved.architecture, None
    if resolved.several:
        replaced = _accelerator_selector_keys(node_groups, accelerator)
        groups = [node_groups.group_for(a, resolved.source) for a in resolved.any_of]
        for arch, group in zip(resolved.any_of, groups):
            _check_no_conflict(arch, resolved.source, pod_spec, group.node_selector)
            for toleration in group.tolerations:
                _add_toleration(tolerations, toleration.to_k8s())
        affinity = _and_terms(affinity, _any_of_terms(groups, set(selector) | replaced))
    elif architecture is not None:
        group = node_groups.group_for(architecture, resolved.source)
        _check_no_conflict(architecture, resolved.source, pod_spec, group.node_selector)
        node_group = group.node_group
        selector, affinity = _merged(selector, tolerations, affinity, group, override=True)

    accelerator_name, resource = "", GPU_RESOURCE
    if accelerator is not None and accelerator.wanted:
        entry = None
        if accelerator.device:
            entry = node_groups.accelerator_for(accelerator.device)
            accelerator_name = accelerator.device.lower()
            own = pod_spec.get("nodeSelector") or {}
            for key, value in entry.node_selector.items():
                if key in own and own[key] != value:
                    raise InvalidConfig(
                        f"pod_template.nodeSelector.{key}",
                        own[key],
                        f"accelerator {accelerator.device} needs {key}={value}; remove {key} from the pod template",
                    )
            selector, affinity = _merged(selector, tolerations, affinity, entry, override=True)
            affinity = _with_required_terms(affinity, _partition_terms(accelerator, entry))
            _add_toleration(tolerations, _partition_toleration(accelerator, entry))
        resource = (entry.resource if entry and entry.resource else "") or DEVICE_CLASS_RESOURCES.get(
            accelerator.device_class, GPU_RESOURCE
        )
        # Device plugins taint accelerator nodes with the resource name; Kubernetes' ExtendedResourceToleration
        # admission adds this toleration, but Armada's scheduler matches taints before any admission runs.
        _add_toleration(tolerations, {"key": resource, "operator": "Exists", "effect": "NoSchedule"})

    priority_class = ""
    if interruptible is not None:
        capacity = node_groups.capacity_class(interruptible)
        selector, affinity = _merged(selector, tolerations, affinity, capacity)
        priority_class = capacity.priority_class
    any_of = resolved.any_of if resolved.several else ()
    return Placement(
        architecture, node_group, selector, tolerations, affinity, accelerator_name, resource, priority_class, any_of
    )


def _accelerator_selector_keys(node_groups: NodeGroups, accelerator: Optional[AcceleratorRequest]) -> set[str]:
    """Selector keys the accelerator's entry sets: they replace an architecture group's, as for one architecture."""
    if accelerator is None or not accelerator.wanted or not accelerator.device:
        return set()
    entry = node_groups.accelerators.get(accelerator.device.lower())
    return set(entry.node_selector) if entry else set()


def _any_of_terms(groups: list[NodeGroup], left_out: set[str]) -> list[list[dict[str, Any]]]:
    """Required node-selector terms reaching any of `groups`' nodes: Kubernetes ORs the terms (and so does Armada's
    scheduler, which matches them with Kubernetes' own MatchNodeSelectorTerms:
    internal/scheduler/kubernetesobjects/label/label.go), so each group is one term: its selector as `In`
    expressions, plus its own affinity. When the groups differ only by architecture, one term
    `kubernetes.io/arch In [all of them]` says the same more plainly.

    `left_out`: selector keys the pod's own selector (or the accelerator's) already decides.
    """
    terms = []
    for group in groups:
        term = [
            MatchExpression(key=key, operator="In", values=[value]).to_k8s()
            for key, value in sorted(group.node_selector.items())
            if key not in left_out
        ]
        term += [e.to_k8s() for e in group.required_node_affinity]
        if not term:
            return []  # one group needs nothing beyond what the pod selects already: no OR to add
        terms.append(term)
    rests = [[e for e in term if e.get("key") != ARCH_LABEL] for term in terms]
    if all(rest == rests[0] for rest in rests) and all(len(t) == len(r) + 1 for t, r in zip(terms, rests)):
        values = [group.node_selector[ARCH_LABEL] for group in groups]
        return [[MatchExpression(key=ARCH_LABEL, operator="In", values=values).to_k8s(), *rests[0]]]
    return terms


def _and_terms(affinity: Optional[dict[str, Any]], terms: list[list[dict[str, Any]]]) -> Optional[dict[str, Any]]:
    """AND an OR of `terms` into the pod's required node affinity: every existing term times every new one."""
    if not terms:
        return affinity
    affinity = copy.deepcopy(affinity) if affinity else {}
    required = affinity.setdefault("nodeAffinity", {}).setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    existing = required.get("nodeSelectorTerms") or [{}]
    combined = []
    for old in existing:
        for new in terms:
            term = copy.deepcopy(old)
            expressions = term.setdefault("matchExpressions", [])
            expressions.extend(e for e in new if e not in expressions)
            combined.append(term)
    required["nodeSelectorTerms"] = combined
    return affinity


def _merged(
    selector: dict[str, str],
    tolerations: list[dict[str, Any]],
    affinity: Optional[dict[str, Any]],
    constraints: Constraints,
    override: bool = False,
) -> tuple[dict[str, str], Optional[dict[str, Any]]]:
    """Add `constraints` to the pod's: on a shared selector key the constraints win with `override`
    (conflicts with the pod template were refused before), else the pod's value stays; tolerations
    are appended in place; affinity expressions are ANDed into every term."""
    merged = {**selector, **constraints.node_selector} if override else {**constraints.node_selector, **selector}
    for toleration in constraints.tolerations:
        _add_toleration(tolerations, toleration.to_k8s())
    return merged, _with_required_terms(affinity, [e.to_k8s() for e in constraints.required_node_affinity])


def _add_toleration(tolerations: list[dict[str, Any]], wanted: Optional[dict[str, Any]]) -> None:
    if wanted is not None and wanted not in tolerations:
        tolerations.append(wanted)


def _partition_terms(request: AcceleratorRequest, entry: Any) -> list[dict[str, Any]]:
    """The MIG partition rule: the partition label In [size], or (unpartitioned) DoesNotExist."""
    if request.partition:
        if request.partition not in entry.partitions:
            raise AcceleratorNotOffered(request.device, entry.partitions, partition=request.partition)
        return [MatchExpression(key=entry.partition_label, operator="In", values=[request.partition]).to_k8s()]
    if request.unpartitioned and entry.partition_label:
        return [MatchExpression(key=entry.partition_label, operator="DoesNotExist").to_k8s()]
    return []


def _partition_toleration(request: AcceleratorRequest, entry: Any) -> Optional[dict[str, Any]]:
    """Flyte's pod plugin also tolerates `<partition label>=<size>:NoSchedule` on partitioned nodes."""
    if not request.partition:
        return None
    return Toleration(key=entry.partition_label, value=request.partition, effect="NoSchedule").to_k8s()


def _check_no_conflict(
    architecture: Architecture, source: str, pod_spec: Mapping[str, Any], group_selector: Mapping[str, str]
) -> None:
    own_selector = pod_spec.get("nodeSelector") or {}
    for key, value in group_selector.items():
        if key in own_selector and own_selector[key] != value:
            raise ArchitectureConflict(
                f"the task's pod template has nodeSelector {key}={own_selector[key]}, but the task runs on "
                f"{architecture.value} (set by {source}), whose node group needs {key}={value}. "
                f"Remove {key} from the pod template, or set ArmadaConfig(architecture=...) to match it."
            )
    allowed = _affinity_arch_values(pod_spec)
    if allowed is not None and architecture.value not in allowed:
        raise ArchitectureConflict(
            f"the task's pod template requires {ARCH_LABEL} in {sorted(allowed)} by node affinity, but the task "
            f"runs on {architecture.value} (set by {source}). Remove that affinity term, or set "
            f"ArmadaConfig(architecture=...) to match it."
        )


def _affinity_arch_values(pod_spec: Mapping[str, Any]) -> Optional[set[str]]:
    """Arch values the pod's required node affinity allows, or None if it doesn't constrain arch."""
    terms = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}
    ).get("nodeSelectorTerms") or []
    allowed: Optional[set[str]] = None
    for term in terms:
        term_allowed: Optional[set[str]] = None
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") == ARCH_LABEL and expression.get("operator") == "In":
                values = set(expression.get("values") or [])
                term_allowed = values if term_allowed is None else term_allowed & values
        if term_allowed is None:
            return None  # a term without an arch rule lets any architecture through
        allowed = term_allowed if allowed is None else allowed | term_allowed
    return allowed


def _with_required_terms(
    affinity: Optional[dict[str, Any]], expressions: list[dict[str, Any]]
) -> Optional[dict[str, Any]]:
    """AND `expressions` into every required node-selector term (terms are ORed by Kubernetes)."""
    if not expressions:
        return affinity
    affinity = copy.deepcopy(affinity) if affinity else {}
    required = affinity.setdefault("nodeAffinity", {}).setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:
        existing = term.setdefault("matchExpressions", [])
        existing.extend(e for e in expressions if e not in existing)
    required["nodeSelectorTerms"] = terms
    return affinity
