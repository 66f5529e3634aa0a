"""A pod's status as a kubelet reports it, at each step of its life on the node. Pure.

The API server takes any status patch (a Succeeded pod patched back to Running is accepted), so the phase
only moves forward here: Pending, Running, then Succeeded or Failed, and an ended pod's status never changes.
Container states follow the kubelet's: waiting (ContainerCreating, PodInitializing, or why it can't start,
e.g. CreateContainerConfigError for a missing Secret), running since a time, terminated with the exit
code, the reason (Completed, Error, OOMKilled, ...), a message and the start and finish times. A pod that
passed its activeDeadlineSeconds has the pod-level reason DeadlineExceeded and the kubelet's message;
otherwise the pod's message stays empty while a container's end says why, so Armada's executor writes the
failure from the containers' ends (internal/executor/util/pod_status.go reads the pod's message first).
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass, field
from typing import Any, Optional

from armada_flyte.node_agent.node_objects import rfc3339
from armada_flyte.pod_runner import ContainerEnd, PodEnd


class Phase(enum.IntEnum):
    """Kubernetes' pod phases in the order they may follow each other."""

    PENDING = 0
    RUNNING = 1
    SUCCEEDED = 2
    FAILED = 3

    @property
    def text(self) -> str:
        return self.name.capitalize()

    @property
    def ended(self) -> bool:
        return self >= Phase.SUCCEEDED


@dataclass(frozen=True)
class PodProgress:
    """What the node knows of one pod's run: the facts its status is made from."""

    phase: Phase = Phase.PENDING
    started_at: Optional[datetime.datetime] = None
    """When the node took the pod (the status's startTime)."""
    running_at: Optional[datetime.datetime] = None
    ended_at: Optional[datetime.datetime] = None
    end: Optional[PodEnd] = None
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    ends: tuple[ContainerEnd, ...] = field(default=())


def advanced(progress: PodProgress, phase: Phase) -> bool:
    """Whether moving to `phase` is a step forward (an ended pod never moves again)."""
    return not progress.phase.ended and phase > progress.phase


def pod_status(spec: dict[str, Any], progress: PodProgress) -> dict[str, Any]:
    """The whole status to send (a merge patch replaces its lists whole)."""
    status: dict[str, Any] = {
        "phase": progress.phase.text,
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}],
        "conditions": _conditions(spec, progress),
        "initContainerStatuses": [_container(c, progress, init=True) for c in spec.get("initContainers") or []],
        "containerStatuses": [_container(c, progress, init=False) for c in spec.get("containers") or []],
    }
    if progress.started_at is not None:
        status["startTime"] = rfc3339(progress.started_at)
    status.update(_pod_reason(progress.end))
    return status


def _pod_reason(end: Optional[PodEnd]) -> dict[str, str]:
    """The pod-level reason and message of an ended pod: its own reason (DeadlineExceeded) with the runner's
    words, or the runner's words when no container failed (the pod never ran); none when containers say it."""
    if end is None:
        return {}
    if end.reason:
        return {"reason": end.reason, "message": end.error}
    if end.error and not any(c.exit_code != 0 for c in end.containers):
        return {"message": end.error}
    return {}


def _conditions(spec: dict[str, Any], progress: PodProgress) -> list[dict[str, str]]:
    since = rfc3339(progress.started_at or datetime.datetime.now(datetime.timezone.utc))
    running = progress.phase == Phase.RUNNING
    initialized = progress.phase != Phase.PENDING or not spec.get("initContainers")

    def condition(kind: str, true: bool, reason: str = "") -> dict[str, str]:
        entry = {"type": kind, "status": "True" if true else "False", "lastTransitionTime": since}
        if reason and not true:
            entry["reason"] = reason
        return entry

    ready_reason = "PodCompleted" if progress.phase.ended else "ContainersNotReady"
    return [
        condition("PodReadyToStartContainers", True),
        condition("Initialized", initialized or progress.phase.ended, "ContainersNotInitialized"),
        condition("Ready", running, ready_reason),
        condition("ContainersReady", running, ready_reason),
        condition("PodScheduled", True),
    ]


def _container(container: dict[str, Any], progress: PodProgress, init: bool) -> dict[str, Any]:
    name = container.get("name", "")
    ended = next((end for end in progress.ends if end.name == name), None)
    running = progress.phase == Phase.RUNNING and not init and ended is None
    status: dict[str, Any] = {
        "name": name,
        "image": container.get("image", ""),
        "imageID": "",
        "ready": running,
        "started": running,
        "restartCount": 0,
        "state": _state(ended, progress, init, running),
    }
    if ended is not None or running:
        status["containerID"] = f"armada-flyte://{name}"
    return status


def _state(ended: Optional[ContainerEnd], progress: PodProgress, init: bool, running: bool) -> dict[str, Any]:
    started = rfc3339(progress.running_at or progress.started_at or datetime.datetime.now(datetime.timezone.utc))
    if ended is not None:
        finished = rfc3339(progress.ended_at or datetime.datetime.now(datetime.timezone.utc))
        terminated: dict[str, Any] = {
            "exitCode": ended.exit_code,
            "reason": ended.reason or ("Completed" if ended.exit_code == 0 else "Error"),
            "startedAt": started,
            "finishedAt": finished,
        }
        if ended.message:
            terminated["message"] = ended.message
        return {"terminated": terminated}
    if running:
        return {"running": {"startedAt": started}}
    if progress.phase.ended:  # never started: the pod ended first (an init container failed, or it was stopped)
        return {"waiting": {"reason": "PodInitializing" if not init else "ContainerCreating"}}
    waiting = {"reason": progress.waiting_reason}
    if progress.waiting_message:
        waiting["message"] = progress.waiting_message
    return {"waiting": waiting}


def ended_phase(end: PodEnd) -> Phase:
    """Succeeded when the pod ended well (exit 0, no pod-level reason), else Failed."""
    return Phase.SUCCEEDED if end.exit_code == 0 and not end.reason and not end.error else Phase.FAILED
