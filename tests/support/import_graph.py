"""The package's real import graph, read from the source with `ast`: every module of
`armada_flyte` and every import between them, imports inside functions included."""

from __future__ import annotations

import ast
import pathlib
from typing import NamedTuple

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "src" / "armada_flyte"


class Edge(NamedTuple):
    """`module` imports `target`; `lazy` when the import sits inside a function or class."""

    module: str
    target: str
    lazy: bool


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE_DIR.rglob("*.py")}
MODULE_NAMES = set(MODULES)


def imports(path: pathlib.Path) -> list[tuple[str, bool]]:
    """(imported module, inside a function) for every import of the module at `path`."""
    found = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # `from package import module` imports that module; `from module import name` the module
            submodules = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [name for name in submodules if name in MODULE_NAMES] or [node.module]
        else:
            continue
        found += [(name, node.col_offset > 0) for name in names]
    return found


EDGES = {
    Edge(module, target, lazy)
    for module, path in MODULES.items()
    for target, lazy in imports(path)
    if target in MODULES and target != module
}
