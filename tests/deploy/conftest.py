"""Load the deployment files once, as the tools that apply them would read them; build the Go checkers in
`go/` (Kubernetes' API types, Flyte's backend client), once per source and Go version, cached."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import shutil
import subprocess
import tempfile
from types import ModuleType
from typing import Any

import pytest
import yaml

from support.real_parts import missing_part

DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy"
GO_PROGRAMS = pathlib.Path(__file__).resolve().parent / "go"
GO_BUILD_SECONDS = 900
"""A first build of the Kubernetes API types took 72 s on the shared 2-core machine; generous for a busier one."""


def _documents(path: pathlib.Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


@pytest.fixture(scope="session")
def deploy_dir() -> pathlib.Path:
    return DEPLOY


@pytest.fixture(scope="session")
def manifests() -> dict[str, dict[str, Any]]:
    """Every Kubernetes object under deploy/kubernetes, by `Kind/name`."""
    objects = {}
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        for doc in _documents(path):
            if doc.get("kind") == "Kustomization":
                continue
            objects[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return objects


@pytest.fixture(scope="session")
def connector_pod(manifests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return manifests["Deployment/armada-flyte-connector"]["spec"]["template"]["spec"]


@pytest.fixture(scope="session")
def load_yaml():
    """Read one deploy/ file (a single YAML document)."""

    def load(relative: str) -> Any:
        [doc] = _documents(DEPLOY / relative)
        return doc

    return load


@pytest.fixture(scope="session")
def connector_app() -> ModuleType:
    """deploy/connector_app.py, imported as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("armada_flyte_connector_app", DEPLOY / "connector_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def settings_env_names() -> set[str]:
    """Every environment variable name the connector's settings read (upper-cased)."""
    from armada_flyte.connector.config.settings import CONFIG_FILE_ENV, ENV_NAMES

    return {CONFIG_FILE_ENV} | {name for names in ENV_NAMES.values() for name in names}


def _go() -> str:
    found = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if found is None:
        missing_part("no Go toolchain (PATH or /usr/local/go/bin/go): it builds the checkers in tests/deploy/go/")
    return str(found)


def go_program(name: str) -> pathlib.Path:
    """tests/deploy/go/NAME built, cached under ~/.cache/armada-flyte/go-programs/ by its sources and Go version.

    Its modules come from the Go module proxy at the versions go.sum pins; a fetch that fails is a
    missing part, a build that fails is a failure."""
    go, source = _go(), GO_PROGRAMS / name
    env = {**os.environ, "GOWORK": "off", "GOFLAGS": "-mod=readonly -buildvcs=false", "GOTOOLCHAIN": "local"}
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout
    digest = hashlib.sha256(version.encode())
    for path in sorted(p for p in source.iterdir() if p.is_file()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    cache = pathlib.Path(os.environ.get("ARMADA_FLYTE_CACHE", pathlib.Path.home() / ".cache" / "armada-flyte"))
    binary = cache / "go-programs" / f"{name}-{digest.hexdigest()[:16]}" / name
    if binary.is_file():
        return binary
    fetched = subprocess.run(
        [go, "mod", "download"], cwd=source, env=env, capture_output=True, text=True, timeout=GO_BUILD_SECONDS
    )
    if fetched.returncode != 0:
        missing_part(f"{name}'s Go modules could not be fetched: {fetched.stderr[-2000:]}")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=binary.parent) as work:
        built = subprocess.run(
            [go, "build", "-trimpath", "-o", f"{work}/{name}", "."],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=GO_BUILD_SECONDS,
        )
        assert built.returncode == 0, f"go build of tests/deploy/go/{name} failed:\n{built.stderr[-3000:]}"
        os.replace(f"{work}/{name}", binary)  # whole or not at all, for a build another run shares
    return binary


@pytest.fixture(scope="session")
def manifest_check() -> pathlib.Path:
    """tests/deploy/go/manifestcheck: manifests decoded strictly into Kubernetes' API types, then checked."""
    return go_program("manifestcheck")


@pytest.fixture(scope="session")
def backend_dial() -> pathlib.Path:
    """tests/deploy/go/backenddial: a connector dialled as Flyte's connector plugin dials it."""
    return go_program("backenddial")
