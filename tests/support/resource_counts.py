"""What a test process holds right now: its threads and its open sockets, and a bounded wait for them
to fall back to a baseline (threads and sockets close asynchronously after their owner is closed)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

SETTLE_SECONDS = 30.0
"""How long closed channels and stopped threads get to go away; only a leak ever waits this long."""


@dataclass(frozen=True)
class Held:
    """The threads (by name), sockets (by inode) and child processes (by pid) the process holds."""

    threads: tuple[str, ...]
    sockets: frozenset[str]
    children: frozenset[int]

    def beyond(self, baseline: Held) -> str:
        """What is held beyond `baseline`, for a failure message; empty when nothing is."""
        parts = []
        if len(self.threads) > len(baseline.threads):
            extra = Counter(self.threads) - Counter(baseline.threads)
            names = ", ".join(f"{count} x {name}" for name, count in sorted(extra.items()))
            parts.append(f"{len(self.threads) - len(baseline.threads)} more threads ({names})")
        if len(self.sockets) > len(baseline.sockets):
            parts.append(f"{len(self.sockets) - len(baseline.sockets)} more open sockets")
        if self.children - baseline.children:
            parts.append(f"child processes {sorted(self.children - baseline.children)}")
        return "; ".join(parts)


def held() -> Held:
    """This process's live threads, open sockets (`/proc/self/fd` links to `socket:[inode]`) and children."""
    sockets = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed between listing and reading
            continue
        if target.startswith("socket:"):
            sockets.add(target)
    return Held(tuple(sorted(t.name for t in threading.enumerate())), frozenset(sockets), _children())


def _children() -> frozenset[int]:
    """Pids whose parent is this process, zombies included (a child nobody waited for is held too)."""
    me, pids = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:  # ended between listing and reading
            continue
        if int(fields[1]) == me:
            pids.add(int(entry))
    return frozenset(pids)


class _Settling:
    """Polls for a return to `baseline`, at growing intervals, failing with what is left at the deadline."""

    def __init__(self, baseline: Held, timeout: float):
        self._baseline, self._timeout = baseline, timeout
        self._deadline = time.monotonic() + timeout
        self._interval = 0.005

    def settled(self) -> bool:
        left = held().beyond(self._baseline)
        if left and time.monotonic() > self._deadline:
            raise AssertionError(f"after {self._timeout} s the process still holds {left}")
        return not left

    def pause(self) -> float:
        self._interval = min(self._interval * 2, 0.2)
        return self._interval


def wait_back_to(baseline: Held, timeout: float = SETTLE_SECONDS) -> None:
    """Return once no more threads, sockets or children are held than at `baseline`; fail naming what is left.

    Not on an event loop: a loop holds a socket pair of its own (its self-pipe), which would count."""
    settling = _Settling(baseline, timeout)
    while not settling.settled():
        time.sleep(settling.pause())


async def assert_back_to(baseline: Held, timeout: float = SETTLE_SECONDS) -> None:
    """`wait_back_to` on the event loop the measured code used (its own sockets are in `baseline` then),
    without a thread of its own (which would count) and without blocking that loop."""
    settling = _Settling(baseline, timeout)
    while not settling.settled():
        await asyncio.sleep(settling.pause())


def assert_repeats_leave_nothing_behind(use: Callable[[], None], times: int) -> None:
    """Run `use` once (grpc's process-wide threads start on first use), then `times` more times, and
    wait for the process to hold no more than it did after the first."""
    use()
    baseline = held()
    for _ in range(times):
        use()
    wait_back_to(baseline)
