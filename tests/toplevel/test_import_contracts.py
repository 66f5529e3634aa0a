"""The layer contracts are import-linter's (`[tool.importlinter]` in pyproject.toml, checked by
`lint-imports` in scripts/test.sh): every package has one, and `lint-imports` fails on an upward import."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from support.import_graph import MODULES, PACKAGE_DIR

ROOT = PACKAGE_DIR.parents[1]
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
LINT_IMPORTS = pathlib.Path(sys.executable).with_name("lint-imports")
NOT_LAYERED = {"armada_flyte.protos"}  # generated protobuf code: a module of the top level's bottom layer


@pytest.mark.pure
def test_every_package_has_an_exhaustive_layers_contract():
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"} - NOT_LAYERED
    layered = {
        container
        for contract in CONTRACTS
        if contract["type"] == "layers" and contract.get("exhaustive")
        for container in contract["containers"]
    }
    assert not sorted(packages - layered), "add a layers contract to pyproject.toml for these packages"
    assert not sorted(layered - packages), "a contract names a package that no longer exists"


def _lint_imports(tree: pathlib.Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(tree / "pyproject.toml")],
        cwd=tree / "src",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def package_copy(tmp_path: pathlib.Path) -> pathlib.Path:
    """The package and its contracts, copied where an import can be added without touching the checkout."""
    shutil.copytree(PACKAGE_DIR, tmp_path / "src" / "armada_flyte", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_lint_imports_keeps_the_copy_as_it_is(package_copy):
    """Guards the tests below: the copy alone passes, so their failures come from the import they add."""
    kept = _lint_imports(package_copy)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "0 broken" in kept.stdout


@pytest.mark.parametrize(
    "module, upward_import, broken",
    [
        ("connector/model/metadata.py", "from armada_flyte.connector import service", "armada_flyte.connector: layers"),
        ("spec.py", "import armada_flyte.admin.cli", "armada_flyte: the sides over the shared top-level modules"),
        ("pod_runner/model.py", "import armada_flyte.pod_runner.docker", "armada_flyte.pod_runner: layers"),
        ("embedded/store/jobs.py", "from armada_flyte.connector.model import metadata", "know no connector"),
    ],
)
def test_lint_imports_fails_on_an_upward_import(package_copy, module, upward_import, broken):
    path = package_copy / "src" / "armada_flyte" / module
    path.write_text(path.read_text() + f"\n\ndef _upward():\n    {upward_import}\n")  # inside a function counts
    result = _lint_imports(package_copy)
    assert result.returncode != 0, result.stdout
    broken_section = result.stdout.split("Broken contracts", 1)[-1]
    assert broken in broken_section, result.stdout


def test_lint_imports_fails_on_a_module_no_layer_names(package_copy):
    (package_copy / "src" / "armada_flyte" / "connector" / "poll" / "newcomer.py").write_text('"""New."""\n')
    result = _lint_imports(package_copy)
    assert result.returncode != 0, result.stdout
    assert "armada_flyte.connector.poll.newcomer" in result.stdout, result.stdout
