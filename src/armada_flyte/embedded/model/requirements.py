"""What a pod asks of a node, read once from its PodSpec at submit.

Pods with equal requirements schedule alike, so a `Requirements` value is also the key under
which the scheduler caches which nodes suit it and whether it can ever fit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping

from armada_flyte.kube import container_requests
from armada_flyte.kube_objects import Toleration

NODE_NAME_FIELD = "metadata.name"


@dataclass(frozen=True)
class NodeExpression:
    """One required node-affinity expression on a node label (or, from matchFields, the node name)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    on_field: bool = False

    def holds(self, labels: Mapping[str, str], node_name: str) -> bool:
        value = node_name if self.on_field else labels.get(self.key)
        op = self.operator
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if op in ("Gt", "Lt"):
            try:
                number, bound = int(value or ""), int(self.values[0])
            except ValueError:
                return False
            return number > bound if op == "Gt" else number < bound
        return False

    def __str__(self) -> str:
        shown = f" [{', '.join(self.values)}]" if self.values else ""
        return f"{self.key} {self.operator}{shown}"


@dataclass(frozen=True)
class Requirements:
    """Tolerations, node selector, required node affinity (OR of ANDed terms) and pod resources."""

    tolerations: tuple[Toleration, ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity_terms: tuple[tuple[NodeExpression, ...], ...] = ()
    resources: tuple[tuple[str, int], ...] = ()

    def __hash__(self) -> int:
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:
        """Computed once: the scheduler looks requirements up in its caches for every job it tries."""
        return hash((self.tolerations, self.node_selector, self.affinity_terms, self.resources))

    @classmethod
    def of_pod(cls, pod: Any) -> Requirements:
        """Read a validated PodSpec (armada_client's k8s proto)."""
        return cls(
            tolerations=tuple(toleration(t) for t in pod.tolerations),
            node_selector=tuple(sorted(pod.nodeSelector.items())),
            affinity_terms=_affinity_terms(pod),
            resources=tuple(sorted(pod_resources(pod).items())),
        )

    def affinity_matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self.affinity_terms:
            return True
        # Kubernetes: an empty term matches no node.
        return any(term and all(e.holds(labels, node_name) for e in term) for term in self.affinity_terms)


def toleration(proto: Any) -> Toleration:
    """The project's `Toleration` for a k8s proto toleration (Kubernetes' empty operator means Equal)."""
    seconds = proto.tolerationSeconds if proto.HasField("tolerationSeconds") else None
    return _toleration(proto.key, proto.operator or "Equal", proto.value, proto.effect, seconds)


@functools.lru_cache(maxsize=1024)
def _toleration(key: str, operator: str, value: str, effect: str, seconds: int | None) -> Toleration:
    return Toleration(key=key, operator=operator, value=value, effect=effect, tolerationSeconds=seconds)


def pod_resources(pod: Any) -> dict[str, int]:
    """Kubernetes' effective pod request: the sum over containers, raised to any larger init container."""
    total: dict[str, int] = {}
    for container in pod.containers:
        for name, amount in container_requests(container).items():
            total[name] = total.get(name, 0) + amount
    for container in pod.initContainers:
        for name, amount in container_requests(container).items():
            total[name] = max(total.get(name, 0), amount)
    return total


def required_node_selector(pod: Any) -> Any | None:
    """The pod's requiredDuringSchedulingIgnoredDuringExecution node selector, if it has one."""
    if not pod.HasField("affinity") or not pod.affinity.HasField("nodeAffinity"):
        return None
    node_affinity = pod.affinity.nodeAffinity
    if not node_affinity.HasField("requiredDuringSchedulingIgnoredDuringExecution"):
        return None
    return node_affinity.requiredDuringSchedulingIgnoredDuringExecution


def _affinity_terms(pod: Any) -> tuple[tuple[NodeExpression, ...], ...]:
    selector = required_node_selector(pod)
    if selector is None:
        return ()
    terms = []
    for term in selector.nodeSelectorTerms:
        expressions = [NodeExpression(e.key, e.operator, tuple(e.values)) for e in term.matchExpressions]
        expressions += [NodeExpression(e.key, e.operator, tuple(e.values), on_field=True) for e in term.matchFields]
        terms.append(tuple(expressions))
    return tuple(terms)
