"""A container's CPU weight from its cpu request, as Kubernetes' cpu.shares gives it, as a nice level.

The kubelet gives each container `cpu.shares` = request in cores x 1024 (at least 2): under
contention, CPU time is split in proportion to requests. The process pod runner has no cgroups to
set, so it picks the nice level whose scheduler weight (the kernel's `sched_prio_to_weight`, 1024
at nice 0, about 1.25 times less per level) comes closest; it never raises a priority above nice 0.
"""

from __future__ import annotations

import math

_WEIGHTS = (1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15)
"""The kernel's weight for nice 0..19 (kernel/sched/core.c)."""


def cpu_nice(request_milli: int) -> int:
    """The nice level (0..19) whose weight is nearest, on a log scale, to Kubernetes' shares for the request."""
    shares = max(2, request_milli * 1024 // 1000)
    if shares >= _WEIGHTS[0]:
        return 0
    return min(range(len(_WEIGHTS)), key=lambda level: abs(math.log(_WEIGHTS[level] / shares)))
