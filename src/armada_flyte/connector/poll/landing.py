"""Where an `architecture="any"` job ran: the architecture, learnt from the run's node.

Armada reports a run's node by name and cluster only (JobRunDetails.node / .cluster in
pkg/api/job.proto), never the node's labels, so the architecture is read back through the
node-group file: the group whose name (or `node_name_prefixes`) the node's name carries. That
is exact on the embedded server, which names nodes `<group>-<n>`, and on clusters whose node
names carry their pool; elsewhere it stays unknown and is reported as such, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from armada_flyte.architecture import Architecture
from armada_flyte.connector.config.node_groups import NodeGroups


@dataclass(frozen=True)
class Landing:
    """The architecture a job ran on (empty: not known), its node, and how the architecture is known."""

    architecture: str
    node: str
    node_group: str = ""
    known_by: str = ""

    def info(self, any_of: list[str]) -> dict[str, Any]:
        """`custom_info` fields: what the job may run on, where it ran, and how that is known."""
        out: dict[str, Any] = {"architectures_allowed": any_of, "architecture": self.architecture}
        if self.node:
            out["node"] = self.node
        if self.node_group:
            out["node_group"] = self.node_group
        if self.known_by:
            out["architecture_known_by"] = self.known_by
        return out

    def describe(self) -> str:
        """` on arm64 (node arm64-0)` for the message Flyte shows; empty before the job has a node."""
        if not self.node:
            return ""
        if not self.architecture:
            return f" on node {self.node} (its architecture is not known: no node group's name matches it)"
        return f" on {self.architecture} (node {self.node})"


def landing_of(any_of: list[str], node: str, node_groups: NodeGroups | None) -> Landing:
    """Where a job allowed `any_of` ran, given its run's node name (empty: not placed yet)."""
    if len(any_of) == 1:
        return Landing(any_of[0], node, known_by="the request (only one architecture fits the image and platform)")
    if not node or node_groups is None:
        return Landing("", node)
    among = [Architecture(a) for a in any_of if a in Architecture.__members__]
    found = node_groups.architecture_of_node(node, among)
    if found is None:
        return Landing("", node)
    group = node_groups.architectures[found].node_group
    return Landing(found.value, node, group, f"the node's name ({node} is in node group {group})")
