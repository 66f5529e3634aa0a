"""Finding and ending every process a pod started, so cancelling a pod leaves nothing behind.

A pod's main process starts in a session of its own, so its process group holds everything it
forks. Children that start their own session escape the group; they are found through the
parent links while their parent is alive. Once the parent has exited they are re-parented and
those links are gone, so every pod process also carries a mark in its environment (inherited
by all it starts), and on Linux the processes with the pod's mark are found through /proc.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Iterable

POD_MARK = "ARMADA_FLYTE_DEV_RUN_ID"
"""The environment variable that marks a pod's processes; its value is the run id."""


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgid: int
    zombie: bool


def process_table() -> list[ProcessInfo]:
    """Every process on the machine (from /proc, or `ps` where there is no /proc)."""
    if os.path.isdir("/proc/self"):
        return list(_from_proc())
    return list(_from_ps())


def _from_proc() -> Iterable[ProcessInfo]:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                raw = stat.read().decode(errors="replace")
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        yield ProcessInfo(int(entry), int(fields[1]), int(fields[2]), fields[0] in ("Z", "X"))


def _from_ps() -> Iterable[ProcessInfo]:
    output = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,pgid=,stat="], capture_output=True, text=True).stdout
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            yield ProcessInfo(int(parts[0]), int(parts[1]), int(parts[2]), parts[3].startswith("Z"))


def is_alive(pid: int) -> bool:
    """True if `pid` runs (a zombie, already dead and only waiting to be reaped, does not count)."""
    return any(p.pid == pid and not p.zombie for p in process_table())


def marked_processes(mark: str) -> set[int]:
    """Live processes whose environment has `POD_MARK` set to `mark` (on Linux; elsewhere none are found)."""
    if not mark or not os.path.isdir("/proc/self"):
        return set()
    wanted = f"{POD_MARK}={mark}".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if wanted in environ.read().split(b"\0"):
                    found.add(int(entry))
        except OSError:
            continue  # gone, or another user's
    return found


def pod_processes(leader: int, mark: str = "") -> set[int]:
    """Live processes of the pod led by `leader`: its process group, all its descendants, and all bearing `mark`."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for proc in table:
        children.setdefault(proc.ppid, []).append(proc.pid)
    found, todo = set(), [leader]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    live = {p.pid for p in table if not p.zombie}
    return (
        {p.pid for p in table if p.pgid == leader and not p.zombie} | (found & live) | (marked_processes(mark) & live)
    )


def terminate(leader: int, grace_seconds: float, mark: str = "", poll_seconds: float = 0.02) -> None:
    """SIGTERM the pod's processes, SIGKILL whatever is left after `grace_seconds`, and wait until all are gone.

    `mark` is the value of the pod's `POD_MARK`: processes bearing it are the pod's wherever they
    have moved, including any started during the grace period.
    """
    victims = pod_processes(leader, mark)
    _signal(leader, victims, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while victims and time.monotonic() < deadline:
        time.sleep(poll_seconds)
        victims = _still_alive(leader, victims)
    victims |= marked_processes(mark)
    deadline = time.monotonic() + 5.0
    while victims and time.monotonic() < deadline:
        _signal(leader, victims, signal.SIGKILL)
        time.sleep(poll_seconds)
        victims = _still_alive(leader, victims) | marked_processes(mark)


def _still_alive(leader: int, victims: set[int]) -> set[int]:
    table = process_table()
    live = {p.pid for p in table if not p.zombie}
    return (victims & live) | {p.pid for p in table if p.pgid == leader and not p.zombie}


def _signal(leader: int, pids: Iterable[int], signum: signal.Signals) -> None:
    own = {os.getpid(), os.getpgrp()}
    if leader not in own:
        try:
            os.killpg(leader, signum)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in set(pids) - own:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
