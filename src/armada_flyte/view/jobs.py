"""What the page says about each job, and the timeline's lanes: pure functions of Armada's answers.

A job's task, architecture and where that came from are the annotations and labels the connector
writes on every job (`connector/model/job_request.py`); a job submitted some other way is read from its pod
spec's `kubernetes.io/arch` node selector. Its node and times are its latest run's, from
Jobs.GetJobDetails. Its state is Armada's, with GetJobErrors' text when there is one; beside it, the
task's outcome where the view knows it (a0's error.pb, `task_errors`): a task that raised reads FAILED
although its pod exited 0 and Armada says SUCCEEDED. A preference's job the task moved on from (cancelled
to spill, or rejected or failed for a move at once) is linked to the job that took its place
(`link_spills`). Jobs are grouped into one timeline per Flyte run (the `flyte.org/run` label; a preference
task has a job set of its own, so job sets don't group a run).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Optional

from armada_client.armada import job_pb2
from google.protobuf import json_format

from armada_flyte.armada_names import JobState
from armada_flyte.connector.model.job_request import (
    ANNOTATION_ANY_OF,
    ANNOTATION_ARCH_SOURCE,
    ANNOTATION_NODE_GROUP,
    ANNOTATION_TASK,
    LABEL_ARCH,
    LABEL_RUN,
    PREFERENCE_JOB_SET,
)
from armada_flyte.connector.model.task_error import TaskError
from armada_flyte.connector.poll.moves import GANG_MOVE_REASON, QUEUED_MOVE_REASON
from armada_flyte.connector.poll.spill import SPILL_REASON
from armada_flyte.kube import ARCH_LABEL

NodeGroupOf = Callable[[str], tuple[str, str]]
"""(node group, architecture) of a node, told by its name; ("", "") when unknown."""

FROM_POD_SPEC = "pod spec"
"""The `from` of a job whose architecture is its pod spec's node selector (not a connector job)."""


def no_node_groups(node: str) -> tuple[str, str]:
    """For an Armada whose node groups the view was not told: nothing is known from a node's name."""
    return "", ""


@dataclass(frozen=True)
class JobRow:
    """One job as the page lists it."""

    job_id: str
    queue: str
    job_set: str
    namespace: str
    task: str
    architecture: str
    """Requested architecture (`any` jobs: the one they ran on, as `arm64 (any)`); empty when none."""
    source: str
    """Where the architecture came from: task / project / platform (the connector's), `pod spec`, or empty."""
    node_group: str
    node: str
    node_architecture: str
    """The architecture of the node the latest run went to (from the node groups, else as requested)."""
    cluster: str
    state: str
    """Armada's job state (QUEUED, RUNNING, SUCCEEDED, ...)."""
    error: str
    submitted_at: float
    started_at: float
    """When the latest run started (else was pending, else leased); 0: never placed."""
    finished_at: float
    """When the latest run ended; 0: not ended."""
    outcome: str = ""
    """The task's outcome where the view knows it (a0's error.pb): SUCCEEDED or FAILED <code>; "" unknown."""
    task_error: str = ""
    """The error a0 recorded (`ValueError: ...`), for a task that raised."""
    run: str = ""
    """The Flyte run the job belongs to (its `flyte.org/run` label); empty for other jobs."""
    cancel_reason: str = ""
    spilled_to: str = ""
    """For a preference's job the task moved on from (spilled, or at once): the job that took its place."""
    spilled_from: str = ""
    """For the job that took a moved-on-from job's place: that job."""
    moved_how: str = ""
    """For that job: `spilled`, or `moved at once` (the job before was rejected, failed on its architecture, or
    had no node of its group left)."""

    @property
    def shown_state(self) -> str:
        """What the badge says: the task's outcome where known, else Armada's state."""
        return self.outcome or self.state

    @property
    def failed(self) -> bool:
        return self.shown_state.split(" ", 1)[0] in FAILED_STATES

    @property
    def spilled(self) -> bool:
        """Cancelled by the connector to move the task to its next architecture."""
        return self.state == "CANCELLED" and self.cancel_reason == SPILL_REASON

    @property
    def moved_on(self) -> bool:
        """A job a preference task may have moved on from: spilled, cancelled for its gang's move or for having no
        node of its group left, or ended REJECTED or FAILED in the task's own job set (a later job of the same task
        there can only be its next step: `connector/poll/moves.py`)."""
        moved = self.state == "CANCELLED" and self.cancel_reason in (GANG_MOVE_REASON, QUEUED_MOVE_REASON)
        return self.spilled or moved or (self.state in ("REJECTED", "FAILED") and PREFERENCE_JOB_SET in self.job_set)

    @property
    def seconds(self) -> Optional[float]:
        """How long the latest run took; None until it has both started and ended."""
        if not self.started_at or not self.finished_at:
            return None
        return max(0.0, self.finished_at - self.started_at)


FAILED_STATES = ("FAILED", "REJECTED", "PREEMPTED")
NOT_KNOWN = object()
"""`job_row`'s `task_error` when the view could not read what a0 recorded."""


def job_row(
    details: job_pb2.JobDetails,
    error: str = "",
    node_group_of: NodeGroupOf = no_node_groups,
    task_error: object = NOT_KNOWN,
) -> JobRow:
    """The row for one job, from GetJobDetails (with `expand_job_spec` and `expand_job_run`), its error, and
    what a0 recorded (`task_error`: a `TaskError`, None when it recorded none, `NOT_KNOWN`)."""
    spec = details.job_spec
    labels, annotations = dict(spec.labels), dict(spec.annotations)
    run = latest_run(details)
    node = run.node if run else ""
    group_of_node, arch_of_node = node_group_of(node) if node else ("", "")
    architecture, source = labels.get(LABEL_ARCH, ""), annotations.get(ANNOTATION_ARCH_SOURCE, "")
    if architecture == "any" or annotations.get(ANNOTATION_ANY_OF):
        architecture = f"{arch_of_node or '?'} (any)" if node else "any"
    elif not architecture:
        selected = (pod_spec_of(spec) or {}).get("nodeSelector", {}).get(ARCH_LABEL, "")
        architecture, source = (selected, source or FROM_POD_SPEC) if selected else ("", source)
    return JobRow(
        job_id=details.job_id,
        queue=details.queue,
        job_set=details.jobset,
        namespace=details.namespace,
        task=annotations.get(ANNOTATION_TASK, ""),
        architecture=architecture,
        source=source,
        node_group=group_of_node or annotations.get(ANNOTATION_NODE_GROUP, ""),
        node=node,
        node_architecture=arch_of_node or ("" if "any" in architecture or not node else architecture),
        cluster=run.cluster if run else "",
        state=JobState.name_of(details.state),
        error=error,
        submitted_at=_seconds(details, "submitted_ts"),
        started_at=_started(run) if run else 0.0,
        finished_at=_seconds(run, "finished_ts") if run else 0.0,
        outcome=_outcome(task_error),
        task_error=task_error.describe() if isinstance(task_error, TaskError) else "",
        run=labels.get(LABEL_RUN, ""),
        cancel_reason=details.cancel_reason,
    )


def _outcome(task_error: object) -> str:
    if task_error is NOT_KNOWN:
        return ""
    return f"FAILED {task_error.code}" if isinstance(task_error, TaskError) else "SUCCEEDED"


def link_spills(rows: list[JobRow]) -> list[JobRow]:
    """Each preference job the task moved on from linked to the job that took its place: the next job of the same
    task in the same job set (a preference task's job set holds its steps alone; a gang's, its members')."""
    by_id = {row.job_id: row for row in rows}
    ordered = sorted(rows, key=lambda r: (r.submitted_at, r.job_id))
    for index, row in enumerate(ordered):
        if not row.moved_on or by_id[row.job_id].spilled_to:
            continue
        after = (
            later
            for later in ordered[index + 1 :]
            if (later.job_set, later.task) == (row.job_set, row.task) and not by_id[later.job_id].spilled_from
        )
        successor = next(after, None)
        if successor is not None:
            by_id[row.job_id] = replace(by_id[row.job_id], spilled_to=successor.job_id)
            how = "spilled" if row.spilled else "moved at once"
            by_id[successor.job_id] = replace(by_id[successor.job_id], spilled_from=row.job_id, moved_how=how)
    return [by_id[row.job_id] for row in rows]


def _started(run: job_pb2.JobRunDetails) -> float:
    """When the run's container started, else when its pod was pending, else when it was leased."""
    return _seconds(run, "started_ts") or _seconds(run, "pending_ts") or _seconds(run, "leased_ts")


def latest_run(details: job_pb2.JobDetails) -> Optional[job_pb2.JobRunDetails]:
    """The job's latest run (Armada lists runs newest first), None when it never ran."""
    runs = [r for r in details.job_runs if r.run_id == details.latest_run_id] or list(details.job_runs)
    return runs[0] if runs else None


def pod_spec_of(job: Any) -> Optional[dict[str, Any]]:
    """The job's pod spec as Kubernetes writes it (real Armada fills `pod_spec`, others `pod_specs`)."""
    if job.HasField("pod_spec"):
        message = job.pod_spec
    elif len(job.pod_specs):
        message = job.pod_specs[0]
    else:
        return None
    return _plain_quantities(json_format.MessageToDict(message))


def _plain_quantities(value: Any) -> Any:
    """Kubernetes' proto wraps each quantity as {"string": "2"}; Kubernetes' YAML writes "2"."""
    if isinstance(value, dict):
        if set(value) == {"string"}:
            return value["string"]
        return {k: _plain_quantities(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_quantities(v) for v in value]
    return value


@dataclass(frozen=True)
class Bar:
    """One run on a lane: where it starts and ends as fractions of the timeline's width."""

    job_id: str
    label: str
    architecture: str
    state: str
    start: float
    end: float
    slot: int = 0
    """Which of the lane's rows it is drawn on: runs that overlap in time (a node runs several pods) get their
    own row, so no bar hides another."""
    failed: bool = False
    """The task failed (its outcome, else Armada's state): the bar is marked."""
    spilled_from: str = ""
    """The job this one took the place of (a preference's move): the bar is marked and says so."""
    moved_how: str = ""
    """How the task moved to this job: `spilled`, or `moved at once` (`JobRow.moved_how`)."""


@dataclass(frozen=True)
class Lane:
    """One node's lane: the node, its group and architecture, and the runs it held."""

    node: str
    node_group: str
    architecture: str
    bars: tuple[Bar, ...]

    @property
    def slots(self) -> int:
        return 1 + max((bar.slot for bar in self.bars), default=0)


@dataclass(frozen=True)
class Timeline:
    """Lanes over a common span of time (`begin`..`end`, seconds since the epoch)."""

    begin: float
    end: float
    lanes: tuple[Lane, ...]


def timeline(rows: Iterable[JobRow], now: float) -> Timeline:
    """One lane per node that ran a job, sorted by node name; a run still going ends at `now`."""
    placed = [row for row in rows if row.node and row.started_at]
    if not placed:
        return Timeline(now, now, ())
    begin = min(row.started_at for row in placed)
    end = max(max(row.finished_at or now for row in placed), begin + 1.0)
    span = end - begin
    by_node: dict[str, list[JobRow]] = {}
    for row in placed:
        by_node.setdefault(row.node, []).append(row)
    lanes = []
    for node in sorted(by_node):
        on_node = sorted(by_node[node], key=lambda r: r.started_at)
        slot_ends: list[float] = []
        bars = []
        for row in on_node:
            ends = row.finished_at or now
            slot = next((i for i, busy_until in enumerate(slot_ends) if busy_until <= row.started_at), len(slot_ends))
            slot_ends[slot : slot + 1] = [ends]
            bars.append(
                Bar(
                    job_id=row.job_id,
                    label=row.task or row.job_id,
                    architecture=row.node_architecture,
                    state=row.state,
                    start=(row.started_at - begin) / span,
                    end=(ends - begin) / span,
                    slot=slot,
                    failed=row.failed,
                    spilled_from=row.spilled_from,
                    moved_how=row.moved_how,
                )
            )
        groups = sorted({row.node_group for row in on_node if row.node_group})
        lanes.append(Lane(node, ", ".join(groups), lane_architecture(on_node), tuple(bars)))
    return Timeline(begin, end, tuple(lanes))


@dataclass(frozen=True)
class RunTimeline:
    """One Flyte run's timeline (or, for jobs of no run, one job set's)."""

    run: str
    """The run's name ("" for jobs of no run: `job_set` names the group)."""
    job_sets: tuple[str, ...]
    timeline: Timeline
    latest: float
    """When its newest job was submitted (the page lists the latest run first)."""


def run_timelines(rows: Iterable[JobRow], now: float) -> list[RunTimeline]:
    """A timeline per Flyte run (its `flyte.org/run` label: its own job set and its preference tasks' ones),
    else per job set, the latest first; each spans its own jobs' time, so an earlier run is no sliver."""
    groups: dict[tuple[str, str], list[JobRow]] = {}
    for row in rows:
        key = (row.run, "") if row.run else ("", f"{row.queue}/{row.job_set}")
        groups.setdefault(key, []).append(row)
    found = [
        RunTimeline(
            run,
            tuple(sorted({row.job_set for row in members})),
            timeline(members, now),
            max(row.submitted_at for row in members),
        )
        for (run, _), members in groups.items()
    ]
    return sorted(found, key=lambda t: t.latest, reverse=True)


def lane_architecture(rows: list[JobRow]) -> str:
    """The node's architecture, as its jobs' rows know it; empty when they don't agree or don't know."""
    found = {row.node_architecture for row in rows}
    return found.pop() if len(found) == 1 else ""


def _seconds(message: Any, name: str) -> float:
    if not message.HasField(name):
        return 0.0
    stamp = getattr(message, name)
    return stamp.seconds + stamp.nanos / 1e9
