"""The rule for real parts: a test needing one that isn't on this machine (a registry, a Docker
engine, buildx) may skip locally, but under CI (`CI=true`) it fails, so a green CI never hides a
part that wasn't there."""

from __future__ import annotations

import os

import pytest

UNDER_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_part(reason: str) -> None:
    """Skip (locally) or fail (under CI) because a real part the test needs is missing."""
    if UNDER_CI:
        pytest.fail(f"missing under CI: {reason}", pytrace=False)
    pytest.skip(reason)
