"""Which CPUs a whole-CPU container is pinned to, as the kubelet's static CPU manager policy picks them:
a fractional or whole-host limit runs in the shared pool, whole CPUs go to the least held CPUs.
(tests/embedded/test_cpu_pins.py runs real pods under these rules.)
"""

from __future__ import annotations

import pytest

from armada_flyte.pod_runner.cpu_pins import CpuPins

pytestmark = pytest.mark.pure


def test_a_fractional_cpu_limit_is_not_pinned() -> None:
    pins = CpuPins((0, 1, 2, 3))
    assert pins.take(250) == ()
    assert pins.take(1500) == ()
    assert pins.holders() == {0: 0, 1: 0, 2: 0, 3: 0}


def test_whole_cpus_go_to_the_cpus_the_fewest_pinned_containers_hold() -> None:
    pins = CpuPins((0, 1, 2, 3))
    first = pins.take(2000)
    second = pins.take(1000)
    third = pins.take(1000)
    assert first == (0, 1) and second == (2,) and third == (3,)
    pins.release(second)
    assert pins.take(1000) == (2,)
    assert pins.take(3000)[:1] == (0,)  # every CPU is held now: the least held ones, sharing


def test_a_limit_of_every_host_cpu_or_more_or_none_is_not_pinned() -> None:
    pins = CpuPins((0, 1))
    assert pins.take(2000) == ()
    assert pins.take(4000) == ()
    assert pins.take(0) == ()
    assert CpuPins(()).take(1000) == ()
