"""One gang, one architecture: remembered per connector process, to refuse a mixed gang early."""

from __future__ import annotations

import threading
from collections import OrderedDict

from armada_flyte.errors import ArchitectureConflict


class GangArchitectures:
    """Which architecture each gang's members take, so a member asking for another fails at create.

    Soft state, bounded: within one connector process (local runs, one c0 replica) a mixed gang
    is refused with a clear error. Across replicas this can't see the other members; every gang
    also carries the `kubernetes.io/arch` uniformity label (unless the author chose another), so
    Armada never splits one across architectures.
    """

    def __init__(self, limit: int = 10_000):
        self._gangs: OrderedDict[tuple[str, str], tuple[str, set[str]]] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def claim(self, queue: str, gang_id: str, member: str, architecture: str, task: str) -> None:
        key = (queue, gang_id)
        with self._lock:
            taken, members = self._gangs.get(key, (architecture, set()))
            if members and taken != architecture:
                raise ArchitectureConflict(
                    f"gang {gang_id!r}: task {task!r} asks for {architecture or 'no architecture'}, but other members "
                    f"run on {taken or 'no architecture'}. One gang runs on one architecture: give every member's "
                    "TaskEnvironment the same ArmadaConfig(architecture=...)."
                )
            members.add(member)
            self._gangs[key] = (taken, members)
            self._gangs.move_to_end(key)
            while len(self._gangs) > self._limit:
                self._gangs.popitem(last=False)

    def release(self, queue: str, gang_id: str, member: str) -> None:
        """Forget a member whose submission failed (the gang is free again once it has none)."""
        key = (queue, gang_id)
        with self._lock:
            entry = self._gangs.get(key)
            if entry is None:
                return
            entry[1].discard(member)
            if not entry[1]:
                del self._gangs[key]
