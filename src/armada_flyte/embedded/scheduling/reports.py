"""The text of Armada's scheduling reports (its SchedulerReporting API), from the embedded scheduler's state.

Armada keeps the most recent scheduling round of each pool and prints, for one job, the
reason it was not scheduled and how many nodes were excluded for each reason
(internal/scheduler/reports/server.go, scheduling/context/job.go and pod.go); for one queue,
what it holds and how many of its jobs could not be scheduled (scheduling/context/queue.go).
The embedded scheduler runs a pass on every change, so its "most recent round" is the state
now: each node is judged against the job as it would be in a pass run at this moment. Like the
rejection report, each reason also names the node groups whose nodes it excluded.
"""

from __future__ import annotations

import datetime
from typing import Iterable, Mapping, Optional, Sequence

from armada_flyte.armada_names import JobState
from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.embedded.scheduling.matching import ExcludedNodes, resource_mismatch, static_mismatch
from armada_flyte.embedded.store.jobs import Job
from armada_flyte.kube import format_milli

DOES_NOT_FIT = "job does not fit on any node"
"""Armada's JobDoesNotFitUnschedulableReason (internal/scheduler/scheduling/constraints/constraints.go)."""


def job_report(cluster: Cluster, free: Sequence[Mapping[str, int]], job_id: str, job: Optional[Job]) -> str:
    """GetJobReport's text for `job_id`: "none" unless the job is waiting to be scheduled."""
    if job is None or job.state != JobState.QUEUED:
        return f"{cluster.pool}:\n\tMost recent scheduling round that affected job {job_id}: none\n"
    excluded = ExcludedNodes()
    for node in cluster.nodes:
        mismatch = static_mismatch(node, job.requirements) or resource_mismatch(free[node.index], job.requirements)
        if mismatch is not None:
            excluded.add(node, mismatch)
    unschedulable = DOES_NOT_FIT if sum(excluded.counts.values()) == len(cluster.nodes) else "none"
    lines = [
        f"Time: {_now()}",
        f"Job ID: {job_id}",
        f"UnschedulableReason: {unschedulable}",
        "Node: none",
        f"Number of nodes in cluster: {len(cluster.nodes)}",
    ]
    if excluded.counts:
        lines += ["Excluded nodes:", *excluded.lines()]
    else:
        lines.append("Excluded nodes: none")
    body = "".join(f"\t\t{line}\n" for line in lines)
    return f"{cluster.pool}:\n\tMost recent scheduling round that affected job {job_id}:\n{body}"


def queue_report(cluster: Cluster, queue: str, usage: Mapping[str, int], waiting: Iterable[Job]) -> str:
    """GetQueueReport's text: what the queue holds, and its waiting jobs grouped by reason."""
    waiting = list(waiting)
    held = ", ".join(f"{name}: {format_milli(name, amount)}" for name, amount in sorted(usage.items()) if amount)
    lines = [
        f"Time: {_now()}",
        f"Queue: {queue}",
        f"Total allocated resources after scheduling: {held or 'none'}",
        f"Number of jobs that could not be scheduled: {len(waiting)}",
    ]
    if waiting:
        lines += ["Unschedulable jobs:", f"\t{len(waiting)}:\t{DOES_NOT_FIT} (e.g., {waiting[0].id})"]
    body = "".join(f"\t\t{line}\n" for line in lines)
    return f"{cluster.pool}:\n\tMost recent scheduling round that considered queue {queue}:\n{body}"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()
