"""What a pod seen on the watch asks of the node, as one pure decision (the agent only carries it out).

A kubelet acts on the pods bound to its node: it starts a new one; when one is being deleted (a
deletionTimestamp), it stops the containers within the grace period, then finishes the deletion (a delete with
grace 0, which the API server waits for); it forgets one the API server has removed. A pod the node was
running but no longer knows (the agent restarted: its processes ended with it) is reported failed rather
than run twice. Pods of other nodes, and of an earlier instance with the same name (another uid), are not
this node's business.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Collection, Optional

LOST_MESSAGE = "the node agent restarted while the pod ran: its processes ended with the agent"
LOST_REASON = "NodeAgentRestarted"


class Step(enum.Enum):
    NOTHING = "nothing"
    """Not this node's pod, or nothing has changed that asks for an action."""
    LAUNCH = "launch"
    STOP = "stop"
    """Stop the pod's containers (SIGTERM, SIGKILL after the grace period); the deletion finishes when they end."""
    FINISH_DELETION = "finish deletion"
    REPORT_LOST = "report lost"
    FORGET = "forget"
    """The API server removed the pod: drop it (stopping what still runs: a forced deletion does not wait)."""


@dataclass(frozen=True)
class Known:
    """What the node holds of a pod: which instance (uid), and how far its run went."""

    uid: str
    ended: bool = False
    stopping: bool = False


def next_step(event: str, pod: dict[str, Any], nodes: Collection[str], known: Optional[Known]) -> Step:
    """The step a watch event (`ADDED`, `MODIFIED`, `DELETED`, or `SYNC` for a listed pod) asks for."""
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") not in nodes:
        return Step.NOTHING
    if known is not None and known.uid != metadata.get("uid", ""):
        return Step.NOTHING  # an earlier pod of the same name: the caller looks pods up by uid
    if event == "DELETED":
        return Step.FORGET if known is not None else Step.NOTHING
    deleting = bool(metadata.get("deletionTimestamp"))
    ended_in_api = status.get("phase") in ("Succeeded", "Failed")
    if known is None:
        if deleting:
            return Step.FINISH_DELETION
        if ended_in_api:
            return Step.NOTHING
        if status.get("startTime"):
            return Step.REPORT_LOST
        return Step.LAUNCH
    if deleting:
        if known.ended:
            return Step.FINISH_DELETION
        return Step.NOTHING if known.stopping else Step.STOP
    return Step.NOTHING


def grace_seconds(pod: dict[str, Any]) -> float:
    """The grace period of a deletion in progress: the deletion's own, else the pod's, else Kubernetes' 30 s."""
    metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    for value in (metadata.get("deletionGracePeriodSeconds"), spec.get("terminationGracePeriodSeconds")):
        if isinstance(value, int) and value >= 0:
            return float(value)
    return 30.0
