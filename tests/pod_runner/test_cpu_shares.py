"""A container's CPU priority from its cpu request: the nice level nearest to Kubernetes' cpu.shares.
(tests/embedded/test_cpu_shares.py runs real pods with `cpuShares: true`.)
"""

from __future__ import annotations

import pytest

from armada_flyte.pod_runner.cpu_shares import cpu_nice

pytestmark = pytest.mark.pure


def test_nice_levels_follow_kubernetes_shares() -> None:
    assert cpu_nice(1000) == 0 and cpu_nice(4000) == 0  # never above normal priority
    assert cpu_nice(100) == 10  # 102 shares; nice 10 weighs 110
    assert cpu_nice(50) == 13  # 51 shares; nice 13 weighs 56
    assert cpu_nice(0) == 19  # no request: Kubernetes' minimum of 2 shares
