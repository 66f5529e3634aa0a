"""Load the deployment files once, as the tools that apply them would read them."""

from __future__ import annotations

import importlib.util
import pathlib
from types import ModuleType
from typing import Any

import pytest
import yaml

DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy"


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
