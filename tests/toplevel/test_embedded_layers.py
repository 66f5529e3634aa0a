"""The embedded server's layers: each of its sub-packages imports only the layers below it (imports
inside functions count), and services and the Kubernetes API, on one layer, not each other."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "src" / "armada_flyte"
EMBEDDED = "armada_flyte.embedded"

# Top layer first; the names of one layer may not import each other.
LAYERS = (
    ("armada",),
    ("config",),
    ("services", "kube_api"),
    ("control_plane",),
    ("scheduling",),
    ("store",),
    ("rules",),
    ("cluster",),
    ("model",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> set[str]:
    """Every module the file imports (`from package import module` names the module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _layer(module: str) -> str | None:
    """The layer name of an embedded module (its sub-package, or its own name at the top), else None."""
    if not module.startswith(f"{EMBEDDED}."):
        return None
    return module[len(EMBEDDED) + 1 :].split(".")[0]


MODULES = {_module_name(path): path for path in (PACKAGE_DIR / "embedded").rglob("*.py")}
EDGES = {
    (module, target)
    for module, path in MODULES.items()
    for target in _imports(path)
    if target in MODULES and _layer(module) and _layer(target) and _layer(module) != _layer(target)
}


def test_the_rule_sees_the_real_imports():
    """Guards the tests below: a few edges the layers must have."""
    assert (f"{EMBEDDED}.services.grpc_server", f"{EMBEDDED}.control_plane.plane") in EDGES
    assert (f"{EMBEDDED}.control_plane.commands", f"{EMBEDDED}.rules.submit_validation") in EDGES
    assert (f"{EMBEDDED}.store.jobs", f"{EMBEDDED}.model.requirements") in EDGES


def test_every_module_has_a_layer():
    assert {_layer(module) for module in MODULES} - {None} <= set(RANK)


def _upward(edges: set[tuple[str, str]], name: str) -> list[str]:
    """The edges from layer `name` to a layer not below it, each named."""
    return [
        f"{module} -> {target}: '{_layer(target)}' is not below '{name}'"
        for module, target in sorted(edges)
        if _layer(module) == name and RANK[_layer(target)] <= RANK[name]
    ]


def test_the_rule_names_an_edge_up_and_one_across():
    up = (f"{EMBEDDED}.store.jobs", f"{EMBEDDED}.control_plane.plane")
    across = (f"{EMBEDDED}.kube_api.server", f"{EMBEDDED}.services.auth")
    assert _upward({up}, "store") == [f"{up[0]} -> {up[1]}: 'control_plane' is not below 'store'"]
    assert _upward({across}, "kube_api") == [f"{across[0]} -> {across[1]}: 'services' is not below 'kube_api'"]
    assert _upward({up[::-1]}, "control_plane") == []


@pytest.mark.parametrize("name", sorted(RANK))
def test_a_layer_imports_only_layers_below_it(name):
    upward = _upward(EDGES, name)
    assert not upward, "\n".join(upward)
