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

pytest_plugins = [
    "support.registry_fixtures",
    "support.flyte_serialization",
    "support.armada_tools",
    "support.real_armada",
    "support.purity_guard",
    "pytester",
]


@pytest.fixture(autouse=True)
def _fresh_connector_settings():
    """Each test starts with no settings from `armada_flyte.configure`."""
    from armada_flyte.connector import settings

    settings.reset()
    yield
    settings.reset()


@pytest.fixture
def pods_tmp_path() -> Iterator[pathlib.Path]:
    """A temporary folder process pods can read and write (tmp_path is one they can't enter)."""
    with folder_pods_can_use() as folder:
        yield folder
