"""Why a pod can't land on a node. Each reason is a small value with a message, never a bare bool.

The order follows Armada's scheduler: tolerations against all of the node's taints, then the
node selector, then required node affinity, then resources. The messages read like Armada's,
so a user sees the same words locally and on a real cluster.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

from armada_flyte.cluster.cluster_file import Cluster, Node
from armada_flyte.embedded.model.requirements import NodeExpression, Requirements
from armada_flyte.embedded.model.resources import first_shortfall
from armada_flyte.kube import format_milli
from armada_flyte.kube_objects import Taint


class Mismatch:
    """A reason a node doesn't suit a pod; `str()` gives the message users see."""

    @property
    def message(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class UntoleratedTaint(Mismatch):
    taint: Taint

    @property
    def message(self) -> str:
        return f"taint {self.taint.key}={self.taint.value}:{self.taint.effect} not tolerated"


@dataclass(frozen=True)
class MissingLabel(Mismatch):
    label: str

    @property
    def message(self) -> str:
        return f"node does not match pod NodeSelector: label {self.label} not set"


@dataclass(frozen=True)
class UnmatchedLabel(Mismatch):
    label: str
    wanted: str
    found: str

    @property
    def message(self) -> str:
        return (
            f"node does not match pod NodeSelector: required label {self.label} = {self.wanted}, "
            f"but node has {self.found}"
        )


@dataclass(frozen=True)
class UnmatchedAffinity(Mismatch):
    terms: tuple[tuple[NodeExpression, ...], ...]

    @property
    def message(self) -> str:
        shown = " OR ".join("(" + " AND ".join(str(e) for e in term) + ")" for term in self.terms)
        return f"node does not match pod NodeAffinity {shown}"


@dataclass(frozen=True)
class InsufficientResource(Mismatch):
    resource: str
    required: int
    available: int

    @property
    def message(self) -> str:
        required = format_milli(self.resource, self.required)
        available = format_milli(self.resource, self.available)
        return f"pod requires {required} {self.resource}, but only {available} is available"


def static_mismatch(node: Node, needs: Requirements) -> Mismatch | None:
    """Why `node` can never take the pod, even empty; None if it could."""
    return (
        taint_mismatch(node.taints, needs)
        or selector_mismatch(node.labels, needs)
        or affinity_mismatch(node, needs)
        or resource_mismatch(node.allocatable, needs)
    )


def taint_mismatch(taints: Iterable[Taint], needs: Requirements) -> UntoleratedTaint | None:
    for taint in taints:
        if not any(t.tolerates(taint) for t in needs.tolerations):
            return UntoleratedTaint(taint)
    return None


def selector_mismatch(labels: Mapping[str, str], needs: Requirements) -> Mismatch | None:
    for label, wanted in needs.node_selector:
        found = labels.get(label)
        if found is None:
            return MissingLabel(label)
        if found != wanted:
            return UnmatchedLabel(label, wanted, found)
    return None


def affinity_mismatch(node: Node, needs: Requirements) -> UnmatchedAffinity | None:
    if needs.affinity_matches(node.labels, node.name):
        return None
    return UnmatchedAffinity(needs.affinity_terms)


def resource_mismatch(free: Mapping[str, int], needs: Requirements) -> InsufficientResource | None:
    shortfall = first_shortfall(needs.resources, free)
    return InsufficientResource(*shortfall) if shortfall else None


class ExcludedNodes:
    """The nodes a pod can't land on, counted per reason, each reason with the node groups of its nodes."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._groups: dict[str, list[str]] = {}

    def add(self, node: Node, mismatch: Mismatch) -> None:
        self.counts[mismatch.message] += 1
        named = self._groups.setdefault(mismatch.message, [])
        if node.node_set.name not in named:
            named.append(node.node_set.name)

    def lines(self) -> list[str]:
        """A line per reason, as Armada's reports print it: tab, count, tab, reason (and its node groups)."""
        return [f"\t{count}:\t{message}{self._groups_note(message)}" for message, count in self.counts.items()]

    def _groups_note(self, message: str) -> str:
        named = self._groups.get(message, [])
        return f" (node group{'s' if len(named) > 1 else ''} {', '.join(named)})" if named else ""


def rejection_report(cluster: Cluster, needs: Requirements) -> str | None:
    """Armada's "fits no node" report for a pod no empty node can take, or None if one can.

    Lines count the nodes excluded for each reason, and name the node groups they belong to.
    """
    excluded = ExcludedNodes()
    for node in cluster.nodes:
        mismatch = static_mismatch(node, needs)
        if mismatch is None:
            return None
        excluded.add(node, mismatch)
    lines = [
        f"pool {cluster.pool}:",
        "Node: none",
        f"Number of nodes in cluster: {len(cluster.nodes)}",
        "Excluded nodes:",
        *excluded.lines(),
        "---",
    ]
    return "\n".join(lines)
