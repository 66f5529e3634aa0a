"""Layer and independence contracts over an import graph, in the style of import-linter.

A contract is data about one package: its `layers`, from the top down, each a string of module
groups (a module or sub-package, named relative to the package) joined by `|` (independent: they
may not import each other) or `:` (siblings that may). A module may import its own group, a
sibling joined by `:`, and any layer below; an arrow pointing up is a violation. An `Independence`
contract names groups that may not import each other at all. Every check returns the offending
edges as sentences, so a failure says which import to remove.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from support.import_graph import Edge


@dataclass(frozen=True)
class Layers:
    """`layers` run from the top down; a layer is "a | b" (independent) or "a : b" (not)."""

    package: str
    layers: tuple[str, ...]

    def parsed(self) -> list[tuple[tuple[str, ...], bool]]:
        """Each layer as (its groups, whether they are independent)."""
        parsed = []
        for layer in self.layers:
            if "|" in layer and ":" in layer:
                raise ValueError(f"{self.package}: layer {layer!r} mixes '|' and ':'")
            groups = tuple(name.strip() for name in re.split(r"[|:]", layer))
            parsed.append((groups, ":" not in layer))
        return parsed


@dataclass(frozen=True)
class Independence:
    """No module in one of `groups` imports a module in another of them."""

    package: str
    groups: tuple[str, ...]


def group_of(module: str, package: str, groups: Iterable[str]) -> str | None:
    """The group (a module or sub-package under `package`) that holds `module`, if any."""
    if not module.startswith(package + "."):
        return None
    relative = module[len(package) + 1 :]
    matches = [g for g in groups if relative == g or relative.startswith(g + ".")]
    return max(matches, key=len, default=None)


def _edge(edge: Edge) -> str:
    return f"{edge.module} -> {edge.target}" + (" (inside a function)" if edge.lazy else "")


def layer_violations(contract: Layers, edges: Iterable[Edge]) -> list[str]:
    """Every import that points up a layer, or across independent groups of one layer."""
    layer_index: dict[str, int] = {}
    independent_layer: dict[int, bool] = {}
    for index, (groups, independent) in enumerate(contract.parsed()):
        independent_layer[index] = independent
        layer_index.update((group, index) for group in groups)
    found = []
    for edge in sorted(edges):
        source = group_of(edge.module, contract.package, layer_index)
        target = group_of(edge.target, contract.package, layer_index)
        if source is None or target is None or source == target:
            continue
        if layer_index[target] < layer_index[source]:
            found.append(f"{_edge(edge)}: {target!r} is in a layer above {source!r}")
        elif layer_index[target] == layer_index[source] and independent_layer[layer_index[source]]:
            found.append(f"{_edge(edge)}: {source!r} and {target!r} are independent (one layer, '|')")
    return sorted(found)


def independence_violations(contract: Independence, edges: Iterable[Edge]) -> list[str]:
    """Every import between two of the contract's groups."""
    found = []
    for edge in sorted(edges):
        source = group_of(edge.module, contract.package, contract.groups)
        target = group_of(edge.target, contract.package, contract.groups)
        if source is not None and target is not None and source != target:
            found.append(f"{_edge(edge)}: {source!r} and {target!r} are independent")
    return found


def unplaced(contract: Layers, modules: Iterable[str]) -> list[str]:
    """Modules under the contract's package that no layer names: a new module must pick its layer."""
    groups = [group for layer_groups, _ in contract.parsed() for group in layer_groups]
    return sorted(
        module
        for module in modules
        if module.startswith(contract.package + ".") and group_of(module, contract.package, groups) is None
    )
