"""Shared test rules and fixtures.

A test that needs a real part (a registry, a Docker engine, buildx) that isn't on this machine
may skip locally; under CI (`CI=true`) a missing part fails the run instead (`support.real_parts`).
Helpers live in `tests/support/`, importable as `support.*` (pytest's `pythonpath`).
A test marked `pure` may not open a socket, start a process or a gRPC server or channel
(`support.purity_guard` fails it if it does): `scripts/test.sh --fast` runs those alone.
"""

from __future__ import annotations

import pathlib
from typing import Iterator

import pytest

import armada_flyte  # noqa: F401  (first: it aliases armada_client's vendored google.api protos)

from support.pod_folders import folder_pods_can_use
from support.real_parts import UNDER_CI, missing_part  # noqa: F401  (the rule, for tests that import it from here)

TESTS = pathlib.Path(__file__).parent
REAL_TIER_GROUPS: dict[str, tuple[str, ...]] = {
    "conformance": ("embedded/",),
    "production_path_runs": (
        "e2e/test_backend_path.py",
        "e2e/test_local_runs.py",
        "e2e/test_task_secrets.py",
        "e2e/test_interrupted_runs.py",
        "e2e/test_multiarch_example.py",
    ),
    "production_path_connector": (
        "connector/test_c0_service.py",
        "connector/test_connector.py",
        "connector/test_any_architecture.py",
        "connector/test_architecture_preference.py",
        "connector/test_timeouts_and_metadata.py",
        "connector/test_failure_kinds.py",
        "connector/test_c0_execution_context.py",
        "connector/test_crash_reasons.py",
        "connector/test_batched_calls_at_a_proxy.py",
    ),
    "faults_of_armadas_parts": ("real_armada/test_faults_of_armadas_parts.py",),
    "faults": ("real_armada/",),
    "kubernetes": ("real_kubernetes/",),
}
"""The real-Armada tier's groups (scripts/test.sh runs each with `-m GROUP` on a bed of its own, side by side):
paths under tests/, a folder ending in `/`; a test takes the first group that names it. The conformance suite
with Armada's own cases; the connector's production path in two (the runs, local and through the backend's
stand-in; the connector service's own tests); the faults of Armada's parts, alone on their bed, since they stop
and start its parts; the other fault tests, which start beds of their own; what only Kubernetes shows, on a bed
with Kubernetes (`up --kubernetes`), where scripts/test.sh runs the production path's two groups again."""

pytest_plugins = [
    "support.registry_fixtures",
    "support.docker_images",
    "support.flyte_serialization",
    "support.armada_tools",
    "support.real_armada",
    "support.purity_guard",
    "pytester",
]


@pytest.fixture(autouse=True)
def _fresh_connector_settings():
    """Each test starts with no settings from `armada_flyte.configure`."""
    from armada_flyte.connector.config import settings

    settings.reset()
    yield
    settings.reset()


@pytest.fixture
def pods_tmp_path() -> Iterator[pathlib.Path]:
    """A temporary folder process pods can read and write (tmp_path is one they can't enter)."""
    with folder_pods_can_use() as folder:
        yield folder


def real_tier_group(path: pathlib.Path) -> str | None:
    """The real-Armada group a test file belongs to (REAL_TIER_GROUPS), or None."""
    try:
        relative = path.relative_to(TESTS).as_posix()
    except ValueError:
        return None
    for group, places in REAL_TIER_GROUPS.items():
        if any(relative == place or (place.endswith("/") and relative.startswith(place)) for place in places):
            return group
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test of a real-tier group carries its group's marker, so `-m GROUP` selects the group."""
    for item in items:
        group = real_tier_group(item.path)
        if group is not None:
            item.add_marker(group)
