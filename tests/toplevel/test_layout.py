"""The package's layout rules that import-linter's contracts (pyproject.toml, `lint-imports`) don't
say: the author surface's imports, Flyte's private APIs behind one module, the task side's one lazy
hop, and no two modules importing each other (imports inside functions count too)."""

from __future__ import annotations

import pytest

from support.import_graph import EDGES, MODULES, imports

pytestmark = pytest.mark.pure

SIDES = (
    "task",
    "connector",
    "registry",
    "pod_runner",
    "cluster",
    "embedded",
    "local",
    "view",
    "admin",
    "executor",
    "node_agent",
)

# The documented lazy hops: a laptop run of a task goes from its `execute` to local runs, and
# `armada_flyte.configure(...)` sets the connector's settings.
ALLOWED_LAZY = {
    ("armada_flyte.task.plugin", "armada_flyte.local.run"),
    ("armada_flyte", "armada_flyte.connector.config.settings"),
}


def _side(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SIDES else "top"


def test_the_rules_see_the_whole_package():
    """Guards the tests below: they read the real modules and their imports."""
    assert {"armada_flyte.spec", "armada_flyte.connector.service", "armada_flyte.embedded.services.grpc_server"} <= set(
        MODULES
    )
    assert ("armada_flyte.connector.service", "armada_flyte.spec", False) in EDGES
    assert ("armada_flyte.task.plugin", "armada_flyte.local.run", True) in EDGES


def test_the_author_surface_imports_only_the_top_level_and_the_task_side():
    eager = {t for m, t, lazy in EDGES if m == "armada_flyte" and not lazy}
    assert {_side(t) for t in eager} <= {"top", "task"}
    lazy = {(m, t) for m, t, lazy in EDGES if m == "armada_flyte" and lazy}
    assert lazy <= ALLOWED_LAZY


def test_the_task_side_reaches_local_runs_only_through_its_lazy_hop():
    hops = {(m, t) for m, t, lazy in EDGES if _side(m) == "task" and _side(t) == "local"}
    assert hops == {("armada_flyte.task.plugin", "armada_flyte.local.run")}
    assert all(lazy for m, t, lazy in EDGES if (m, t) in ALLOWED_LAZY)


def test_private_flyte_apis_are_imported_by_flyte_internals_only():
    users = {
        module
        for module, path in MODULES.items()
        for target, _ in imports(path)
        if target.split(".")[0] == "flyte" and any(part.startswith("_") for part in target.split(".")[1:])
    }
    assert users == {"armada_flyte.task.flyte_internals"}


def test_no_import_cycles_counting_imports_inside_functions():
    graph: dict[str, set[str]] = {}
    for module, target, _ in EDGES:
        if (module, target) not in ALLOWED_LAZY:
            graph.setdefault(module, set()).add(target)
    cycles = []
    state: dict[str, int] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append(trail[trail.index(target) :] + [target])
            elif target not in state:
                visit(target, [*trail, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles
