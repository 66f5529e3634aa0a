"""How pods are fenced from the host and from each other: their limits, and (process pods of a root server)
a uid of their own.

Both runners take one `PodFence` (from the cluster file). Process pods of a server running as root run as
an unprivileged uid of their own, `uid_base + n`, taken from a range of `uid_count` uids and given back
when the pod ends: no passwd entry is needed (a uid is a number to the kernel), so nothing is added to
the host. One uid per pod makes the pod's sandbox (owned by it, mode 0700) its own, and makes
RLIMIT_NPROC (which the kernel counts per real uid) a limit of the pod. The default base, 0x70000000,
lies in the range systemd's table of uid ranges leaves unused (1879048192-2147483647, docs/UIDS-GIDS.md);
200000 would fall in the subordinate uid ranges `useradd` hands out from 100000 for rootless containers.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Optional

from armada_flyte.errors import InvalidConfig

DEFAULT_PIDS_LIMIT = 1024
"""Processes and threads a pod may have: an a0 task ran as 1 process of 2 threads; a fork bomb reaches it in ms."""
DEFAULT_FILE_SIZE_LIMIT = 8 * 2**30
"""The largest file a container may write (RLIMIT_FSIZE): 8Gi, the ephemeral storage Armada gives a
container that asks for none (a container asking for less gets that)."""
DEFAULT_UID_BASE = 0x70000000
DEFAULT_UID_COUNT = 65536
FIRST_POD_UID = 1000
"""Below it: the host's system users."""
LAST_POD_UID = 2**31 - 1
"""uids from 2^31 up are read as negative by programs that store them signed."""


@dataclass(frozen=True)
class PodFence:
    pids_limit: int = DEFAULT_PIDS_LIMIT
    """Most processes and threads of one pod: a process pod's RLIMIT_NPROC (when it has a uid of its own) and
    its shim's stop, a docker pod's pids limit (per container)."""
    file_size_limit: int = DEFAULT_FILE_SIZE_LIMIT
    """The largest file one container may write, in bytes (RLIMIT_FSIZE)."""
    uid_base: int = DEFAULT_UID_BASE
    """The first uid of process pods of a root server."""
    uid_count: int = DEFAULT_UID_COUNT
    """How many uids process pods take turns on (more than ever run at once)."""

    def __post_init__(self) -> None:
        for name in ("pids_limit", "file_size_limit", "uid_count"):
            if getattr(self, name) < 1:
                raise InvalidConfig(name, getattr(self, name), "give a number of 1 or more")
        if self.uid_base < FIRST_POD_UID or self.uid_base + self.uid_count - 1 > LAST_POD_UID:
            raise InvalidConfig(
                "uid_base",
                self.uid_base,
                f"give a range of uids no user of the host has, from {FIRST_POD_UID} to {LAST_POD_UID} "
                f"(default {DEFAULT_UID_BASE}: uid_base + uid_count - 1 must stay within it)",
            )

    def owns(self, uid: int) -> bool:
        """Whether `uid` is one of the pods' uids."""
        return self.uid_base <= uid < self.uid_base + self.uid_count

    def file_size_for(self, ephemeral_storage: int) -> int:
        """RLIMIT_FSIZE of a container asking for `ephemeral_storage` bytes (0: it asks for none): a file
        bigger than its whole disk allowance would get the pod evicted on Kubernetes."""
        return min(self.file_size_limit, ephemeral_storage) if ephemeral_storage > 0 else self.file_size_limit


class PodUids:
    """The uids of running pods: each pod takes the next free one of the fence's range, in turn, so a uid
    comes back only after the whole range has been used (and never while a pod holds it)."""

    def __init__(self, fence: PodFence):
        self.fence = fence
        self._next = 0
        self._taken: set[int] = set()
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            for _ in range(self.fence.uid_count):
                uid = self.fence.uid_base + self._next
                self._next = (self._next + 1) % self.fence.uid_count
                if uid not in self._taken:
                    self._taken.add(uid)
                    return uid
        raise InvalidConfig(
            "uid_count", self.fence.uid_count, "more pods run at once than the range has uids; give a larger count"
        )

    def give_back(self, uid: int) -> None:
        with self._lock:
            self._taken.discard(uid)


def run_as_user(pod: Any, container: Any) -> Optional[int]:
    """The uid a container asks to run as (its securityContext.runAsUser, else the pod's), as Kubernetes reads
    it; None when neither says."""
    return _asked(pod, container, "runAsUser")


def run_as_group(pod: Any, container: Any) -> Optional[int]:
    """The gid a container asks to run as (runAsGroup, the container's else the pod's); None when neither says."""
    return _asked(pod, container, "runAsGroup")


def _asked(pod: Any, container: Any, field: str) -> Optional[int]:
    for context in (container.securityContext, pod.securityContext):
        if context.HasField(field):
            return int(getattr(context, field))
    return None


def root_refused(container: str) -> str:
    """Why a process pod of a root server may not run as uid 0 (Kubernetes would, unless Pod Security
    Admission's restricted level forbids it): its processes would be this host's root."""
    return (
        f"container {container} asks for securityContext.runAsUser 0, but process pods run on the host itself, "
        "where uid 0 is the host's root: leave runAsUser out (the pod runs as an unprivileged uid of its own), "
        "or use the docker pod runner"
    )


def shim_options(fence: PodFence, ephemeral_storage: int, uid: Optional[int], view: list[str]) -> list[str]:
    """The container shim's fence options for one container (`view`: the host view's, for a pod with a uid of
    its own; RLIMIT_NPROC only then, as without a uid of the pod's own the kernel would count all of the
    server user's processes against it)."""
    options = [f"--pids={fence.pids_limit}", f"--fsize={fence.file_size_for(ephemeral_storage)}"]
    if uid is not None:
        options += [f"--uid={uid}", *view]
    return options
