"""Where a pod goes: resolve the architecture, then turn it into scheduling constraints.

Pure functions over plain data (pod-spec dicts in Kubernetes' camelCase shape), so every rule is
testable without a server.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from armada_flyte.architecture import Architecture
from armada_flyte.connector.node_groups import NodeGroups
from armada_flyte.errors import ArchitectureConflict
from armada_flyte.kube import ARCH_LABEL


@dataclass(frozen=True)
class ResolvedArchitecture:
    """The architecture a task runs on (None: no arch constraint) and who decided it."""

    architecture: Optional[Architecture]
    source: str
    """task, env, project (baked in at serialisation), pod_template, platform, or none."""


@dataclass(frozen=True)
class Placement:
    """Scheduling constraints for one pod, merged with what its pod template already asked for."""

    architecture: Optional[Architecture]
    node_group: Optional[str]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    affinity: Optional[dict[str, Any]] = None

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
    task_architecture: Optional[Architecture],
    task_source: str,
    node_groups: NodeGroups,
    pod_spec: Mapping[str, Any] | None = None,
) -> ResolvedArchitecture:
    """Task value (incl. project defaults baked in) > pod template's pin > admin default > none."""
    if task_architecture is not None:
        return ResolvedArchitecture(task_architecture, task_source)
    pinned = pinned_architecture(pod_spec)
    if pinned is not None:
        return ResolvedArchitecture(pinned, "pod_template")
    if node_groups.default_architecture is not None:
        return ResolvedArchitecture(node_groups.default_architecture, "platform")
    return ResolvedArchitecture(None, "none")


def placement_for(
    resolved: ResolvedArchitecture,
    node_groups: NodeGroups,
    pod_spec: Mapping[str, Any] | None = None,
) -> Placement:
    """Constraints that put the pod on `resolved`'s node group, keeping the pod template's own.

    Raises `ArchitectureNotOffered` for an architecture the platform lacks, and
    `ArchitectureConflict` when the pod template pins a different architecture.
    """
    pod_spec = pod_spec or {}
    own_selector = dict(pod_spec.get("nodeSelector") or {})
    own_tolerations = [dict(t) for t in pod_spec.get("tolerations") or []]
    own_affinity = copy.deepcopy(pod_spec.get("affinity")) or None
    architecture = resolved.architecture
    if architecture is None:
        return Placement(None, None, own_selector, own_tolerations, own_affinity)

    group = node_groups.group_for(architecture, resolved.source)
    _check_no_conflict(architecture, resolved.source, pod_spec, group.node_selector)

    selector = {**own_selector, **group.node_selector}
    tolerations = list(own_tolerations)
    for toleration in group.tolerations:
        wanted = toleration.to_k8s()
        if wanted not in tolerations:
            tolerations.append(wanted)
    affinity = _with_required_terms(own_affinity, [e.to_k8s() for e in group.required_node_affinity])
    return Placement(architecture, group.node_group, selector, tolerations, affinity)


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
