"""The executor package's layers: pure conversions at the bottom, one module that talks to the scheduler."""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "src" / "armada_flyte" / "executor"
PURE = ("cluster_nodes", "leases", "run_events", "held_runs")
"""Bottom to top: each may import only those before it (and the stubs)."""


def imports(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def executor_modules(module: str) -> set[str]:
    prefix = "armada_flyte.executor."
    return {name[len(prefix) :].split(".")[0] for name in imports(module) if name.startswith(prefix)}


def test_the_pure_conversions_import_only_layers_below_them():
    for index, module in enumerate(PURE):
        assert executor_modules(module) <= {"stubs", *PURE[:index]}, module


def test_only_the_lease_loop_talks_grpc():
    talkers = {p.stem for p in PACKAGE.glob("*.py") if any(n.split(".")[0] == "grpc" for n in imports(p.stem))}
    assert talkers == {"lease_loop"}
