"""Which host CPUs the process pod runner pins a container to: the kubelet's static CPU manager policy.

Armada makes every pod's requests equal its limits, so every pod is Guaranteed. Under the static
policy a Guaranteed container that asks for a whole number of CPUs gets that many CPUs of its
own; any other container (250m, 1500m) runs in the shared pool, on every CPU, its limit being a
CFS quota (a time share, not fewer cores). Here a whole-CPU container is pinned to the CPUs the
fewest pinned containers use right now (so two 1-CPU pods on a 2-CPU machine get one each), and
a fractional one is not pinned: the process pod runner enforces no quota (the docker pod runner
does). A container asking for as many CPUs as the host has, or more, is not pinned either.
"""

from __future__ import annotations

import os
import threading
from collections import Counter


class CpuPins:
    """The CPUs pinned containers hold now; `take` them for a container, `release` them at its end."""

    def __init__(self, host_cpus: tuple[int, ...] | None = None):
        if host_cpus is None:
            host_cpus = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()
        self.host_cpus = host_cpus
        self._holders: Counter[int] = Counter({cpu: 0 for cpu in host_cpus})
        self._lock = threading.Lock()

    def take(self, cpu_milli: int) -> tuple[int, ...]:
        """The CPUs a container with this cpu limit (in millicpus) is pinned to; () for the shared pool."""
        wanted, fraction = divmod(cpu_milli, 1000)
        if fraction or wanted <= 0 or wanted >= len(self.host_cpus):
            return ()
        with self._lock:
            cpus = tuple(sorted(sorted(self.host_cpus, key=lambda cpu: self._holders[cpu])[:wanted]))
            self._holders.update(cpus)
        return cpus

    def release(self, cpus: tuple[int, ...]) -> None:
        with self._lock:
            self._holders.subtract(cpus)

    def holders(self) -> dict[int, int]:
        """How many pinned containers hold each CPU now."""
        with self._lock:
            return dict(self._holders)
