"""Shared test rules.

A test that needs a real part (a registry, a Docker engine, buildx) that isn't on this machine
may skip locally; under CI (`CI=true`) a missing part fails the run instead, so a green CI
never hides a part that wasn't there.
"""

from __future__ import annotations

import os

import pytest

UNDER_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_part(reason: str) -> None:
    """Skip (locally) or fail (under CI) because a real part the test needs is missing."""
    if UNDER_CI:
        pytest.fail(f"missing under CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _fresh_connector_settings():
    """Each test starts with no settings from `armada_flyte.configure`."""
    from armada_flyte import settings

    settings.reset()
    yield
    settings.reset()
