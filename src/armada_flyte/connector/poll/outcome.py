"""What the connector tells Flyte about one job: a pure function of what a poll gathered about it.

`outcome_of(metadata, observed, rules)` maps Armada's state, the latest run's details, a0's error
and Armada's reason to Flyte's phase, message and `custom_info`. It is the last row of the poll's
decision (`decision.py`, which says what to gather first and what to carry out after); every answer
and the message it words stay in this one file, so the table test (tests/connector/test_outcome_table.py)
and the code can be read side by side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.armada_names import REASON_STATES, TERMINAL_STATES, JobState
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.model.run_details import RunDetails
from armada_flyte.connector.model.task_error import TaskError
from armada_flyte.connector.poll.crash_reasons import WrongArchitecture, wrong_architecture
from armada_flyte.connector.poll.landing import landing_of
from armada_flyte.connector.poll.phases import TERMINAL_PHASES, phase_of, state_name
from armada_flyte.connector.poll.queued_report import QueuedReport, explain_rejection

OOM_KILLED = "OOMKilled"
"""The container status reason of a container killed over its memory limit; Armada's reason names it."""
_BYTES_LIMIT = re.compile(r"memory limit \((\d+) bytes")
_BYTES_SEEN = re.compile(r"the most it was seen using: (\d+) bytes")
DEADLINE_EXCEEDED = "Pod was active on the node longer than the specified deadline"
"""The kubelet's message when it ends a pod at its activeDeadlineSeconds (reason DeadlineExceeded)."""
LEASE_EXPIRED = "Lease expired"
"""Armada's reason for a job whose executor stopped reporting for longer than the scheduler's `executorTimeout`
(v0.22.7 fails it for good unless a retry policy requeues it)."""

QUEUED_STATES = frozenset({JobState.QUEUED, JobState.SUBMITTED, JobState.LEASED})
RUN_STATES = frozenset({JobState.PENDING, JobState.RUNNING})
ERROR_FILE_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED})
"""States after which a0 may have written error.pb (it runs in the pod)."""
REASON_WAIT_SECONDS = 10.0
"""Real Armada writes a job's error to its query side asynchronously (the lookout ingester), so
GetJobErrors can answer "" for a moment after the event stream said FAILED or REJECTED: for this
long after the end, a job with no reason yet is reported still in flight, not ended without one."""

_PROGRESS = {
    TaskExecution.QUEUED: 1,
    TaskExecution.WAITING_FOR_RESOURCES: 2,
    TaskExecution.INITIALIZING: 3,
    TaskExecution.RUNNING: 4,
}
"""How far along a non-terminal phase is: a task's reported phase only moves up this order."""


@dataclass(frozen=True)
class ErrorInfo:
    """The `error` entry of `custom_info`: what failed, whose fault (USER or SYSTEM), and whether a retry may help."""

    code: str
    kind: str
    recoverable: bool
    message: str

    @classmethod
    def of(cls, task_error: TaskError) -> ErrorInfo:
        """The error a0 recorded, as Flyte's backend reads it (kind in capitals)."""
        return cls(task_error.code, task_error.kind.upper(), task_error.recoverable, task_error.message)

    def as_info(self) -> dict[str, Any]:
        return {"code": self.code, "kind": self.kind, "recoverable": self.recoverable, "message": self.message}


@dataclass(frozen=True)
class JobOutcome:
    """One poll's answer, richer than Flyte's `Resource` so local runs can raise the right error."""

    phase: int
    state: int
    message: str
    task_error: Optional[TaskError] = None
    node: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    """`custom_info` apart from the error: Armada's state, the architecture, the node, reports, fixes."""
    error: Optional[ErrorInfo] = None
    cancel: bool = False
    """The job is over its time limit: the poll's decision adds the action that cancels it."""
    report: Optional[QueuedReport] = None
    """The scheduling report this answer read, if any (a preference spills only when it says the job waits
    for room)."""

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def info(self) -> dict[str, Any]:
        """What Flyte gets as `custom_info`."""
        return {**self.facts, "error": self.error.as_info()} if self.error else dict(self.facts)


@dataclass(frozen=True)
class Observed:
    """What the connector's I/O gathered for one poll of one job."""

    state: int
    now: float
    """Seconds since the epoch when the poll ran."""
    details: Optional[RunDetails] = None
    task_error: Optional[TaskError] = None
    error_unreadable: str = ""
    """Why error.pb could not be read (empty: it was read, or not asked for)."""
    reason: str = ""
    """Armada's error for the job (GetJobErrors)."""
    queued_report: Optional[QueuedReport] = None
    previous_phase: Optional[int] = None
    """The phase last reported for this task, if this process reported one."""
    exit_codes: dict[str, int] = field(default_factory=dict)
    """Each container's exit code, when the job's failed event listed them."""
    from_events: bool = False
    """The job status API answered UNKNOWN past the ack window, but the job set's events know the job:
    `state` (and the run's facts) are the events'. Armada's query side (the lookout ingester) is behind."""
    events_unreadable: str = ""
    """Why the job set's events could not be read to confirm a job the status API doesn't know (empty: read,
    or not needed)."""


@dataclass(frozen=True)
class Rules:
    """The settings and node groups the poll's decision depends on."""

    ack_timeout_seconds: float
    error_read_grace_seconds: float
    node_groups: Optional[NodeGroups] = None
    queued_report_after_seconds: float = 60.0
    """How long a job may wait queued before Armada's scheduler is asked why."""
    queued_report_refresh_seconds: float = 30.0
    """How old a kept scheduling report may be."""
    platform_mismatch_categories: frozenset[str] = frozenset()
    """Armada failure categories that mean the image cannot run on the node's architecture (a preference then
    moves to its next architecture: `moves.py`)."""


def needs_reason(state: int, task_error: Optional[TaskError], error_unreadable: str) -> bool:
    """Whether Armada's reason is worth a call: a failure a0 explained nothing about."""
    return state in REASON_STATES and task_error is None and not error_unreadable


def refused(meta: ArmadaJobMetadata) -> JobOutcome:
    """The answer for metadata of a task create refused for good (or metadata naming no job)."""
    code = meta.refusal_code or "MissingJobId"
    message = meta.refusal or "the connector metadata names no Armada job (written by a broken connector?)"
    return JobOutcome(
        TaskExecution.FAILED,
        JobState.UNKNOWN,
        f"{code}: {message}",
        facts={"armada_state": "NOT_SUBMITTED"},
        error=ErrorInfo(code, "USER", False, message),
    )


def outcome_of(meta: ArmadaJobMetadata, seen: Observed, rules: Rules) -> JobOutcome:
    """Flyte's answer for the job; a non-terminal phase never goes back behind `seen.previous_phase`."""
    if meta.refusal_code or not meta.job_id:
        return refused(meta)
    outcome = _decided(meta, seen, rules)
    if meta.fallback:
        outcome = _on_fallback(meta, outcome)
    previous = seen.previous_phase
    if previous is not None and not outcome.terminal:
        if _PROGRESS.get(previous, 0) > _PROGRESS.get(outcome.phase, 0):
            return replace(outcome, phase=previous)
    return outcome


def _decided(meta: ArmadaJobMetadata, seen: Observed, rules: Rules) -> JobOutcome:
    state, now, details = seen.state, seen.now, seen.details
    facts: dict[str, Any] = {
        "armada_state": state_name(state),
        "architecture": meta.architecture,
        "node_group": meta.node_group,
    }
    if state in QUEUED_STATES and over_limit(meta.queued_timeout_seconds, meta.submitted_at, now):
        why = _why_queued(seen.queued_report, facts) if state == JobState.QUEUED else ""
        return _timed_out(meta, state, facts, now, meta.queued_timeout_seconds, "waiting to start", why)
    if state in RUN_STATES and details and over_limit(meta.timeout_seconds, details.started_at, now):
        return _timed_out(meta, state, facts, now, meta.timeout_seconds, "running")
    if state == JobState.UNKNOWN:
        return _not_visible(meta, facts, now, rules.ack_timeout_seconds, seen.events_unreadable)
    if seen.from_events:
        facts["state_from"] = "events"
    if state not in TERMINAL_STATES:
        message = f"Armada job {meta.job_id} is {state_name(state)}"
        if seen.from_events:
            message += _query_side_behind(meta, now)
        if meta.any_of:
            message += _landed(meta, details.node if details else "", facts, rules.node_groups)
        if meta.gang_id and state in QUEUED_STATES:
            message += _gang_wait(meta, now)
        if state == JobState.QUEUED:
            message += _why_queued(seen.queued_report, facts)
        return JobOutcome(phase_of(state), state, message, facts=facts)
    return _ended(meta, seen, rules, facts)


def _on_fallback(meta: ArmadaJobMetadata, outcome: JobOutcome) -> JobOutcome:
    """Say that the task runs on the admin's fallback architecture, and why, in the message and `custom_info`."""
    said = f"to {meta.architecture}, the admin's fallback architecture: {meta.fallback}"
    message = f"{outcome.message}\nNarrowed {said}" if outcome.terminal else f"{outcome.message}; narrowed {said}"
    facts = {**outcome.facts, "fallback": {"architecture": meta.architecture, "why": meta.fallback}}
    return replace(outcome, message=message, facts=facts)


def _not_visible(
    meta: ArmadaJobMetadata, facts: dict[str, Any], now: float, ack_timeout: float, events_unreadable: str
) -> JobOutcome:
    """Armada doesn't know the job (yet): QUEUED, the phase before any it reports next, until the ack timeout.
    Past it, the job is lost only when its job set's events don't know it either; while they can't be read
    no one can tell, so the task waits (its timeout, if any, still bounds it)."""
    waited = now - meta.submitted_at
    if not (meta.submitted_at and waited > ack_timeout):
        message = f"Armada job {meta.job_id} not visible yet"
        return JobOutcome(TaskExecution.QUEUED, JobState.UNKNOWN, message, facts=facts)
    if events_unreadable:
        message = (
            f"Armada's job status API (GetJobStatus) does not know job {meta.job_id} {waited:.0f}s after submit "
            f"(ack timeout {ack_timeout:.0f}s), and its job set's events could not be read to tell whether it "
            f"was lost ({events_unreadable}); asking again"
        )
        return JobOutcome(TaskExecution.QUEUED, JobState.UNKNOWN, message, facts=facts)
    return JobOutcome(
        TaskExecution.FAILED,
        JobState.UNKNOWN,
        f"Armada has not acknowledged job {meta.job_id} after {waited:.0f}s (ack timeout "
        f"{ack_timeout:.0f}s): neither its job status API nor its job set's events know it; it was lost or "
        "submitted to another Armada.",
        facts=facts,
    )


def _query_side_behind(meta: ArmadaJobMetadata, now: float) -> str:
    """Why the state came from the events: Armada's query side doesn't answer for the job."""
    return (
        f" by its job set's events; Armada's job status API (GetJobStatus) does not know it "
        f"{now - meta.submitted_at:.0f}s after submit: Armada's query side (the lookout ingester and its "
        "database) is down or behind, so the connector follows the events"
    )


def _ended(meta: ArmadaJobMetadata, seen: Observed, rules: Rules, facts: dict[str, Any]) -> JobOutcome:
    """A terminal state: a0's error first (it knows what the task raised), then Armada's state and reason."""
    state, details, reason = seen.state, seen.details, seen.reason
    node = details.node if details else ""
    facts["node"] = node
    facts["cluster"] = details.cluster if details else ""  # which executor (Armada's cluster id) ran it
    if seen.exit_codes:
        facts["exit_codes"] = dict(seen.exit_codes)
    if seen.error_unreadable:
        ended = details.finished_at if details else 0.0
        if ended and seen.now - ended < rules.error_read_grace_seconds:
            # Not terminal yet: a0 may have failed, and only error.pb would say so.
            message = f"Armada job {meta.job_id} ended; {seen.error_unreadable}; retrying"
            return JobOutcome(TaskExecution.RUNNING, state, message, facts=facts)
        # Unknown is not success: a system failure Flyte may retry, never SUCCEEDED.
        message = (
            f"BlobStoreUnreadable: Armada job {meta.job_id} ended, but whether the task raised is unknown: "
            f"{seen.error_unreadable}, still {rules.error_read_grace_seconds:g}s after the end "
            f"(error_read_grace_seconds); check the blob store (blob_endpoint) and retry"
        )
        error = ErrorInfo("BlobStoreUnreadable", "SYSTEM", True, message)
        return _failed(TaskExecution.RETRYABLE_FAILED, state, f"{message} (SYSTEM error)", node, facts, error)
    if needs_reason(state, seen.task_error, "") and not reason and _reason_may_come(meta, seen):
        message = f"Armada job {meta.job_id} is {state_name(state)}; waiting for Armada's reason"
        return JobOutcome(TaskExecution.RUNNING if details else TaskExecution.QUEUED, state, message, facts=facts)
    where = f"job {meta.job_id}" + (f" on node {node}" if node else "")
    if meta.any_of:
        where = f"job {meta.job_id}" + _landed(meta, node, facts, rules.node_groups)
    if (task_error := seen.task_error) is not None:
        # a0 marks an error recoverable unless the task raised NonRecoverableError: a retryable
        # failure lets the backend spend the task's `retries=`, as it does for stock pods.
        phase = TaskExecution.RETRYABLE_FAILED if task_error.recoverable else TaskExecution.FAILED
        message = f"{task_error.describe()} ({task_error.kind.upper()} error, {where})"
        if crash := wrong_architecture(task_error.message, meta.image, facts.get("architecture") or ""):
            message = _explained(crash, message, facts)
        return JobOutcome(phase, state, message, task_error, node, facts, ErrorInfo.of(task_error))
    if state == JobState.SUCCEEDED:
        return JobOutcome(TaskExecution.SUCCEEDED, state, f"Armada {where} succeeded", None, node, facts)
    if state == JobState.PREEMPTED:
        message = f"Preempted: Armada {where} was preempted" + (f": {reason}" if reason else "")
        error = ErrorInfo("Preempted", "SYSTEM", True, message)
        return _failed(TaskExecution.RETRYABLE_FAILED, state, f"{message} (SYSTEM error)", node, facts, error)
    if state == JobState.FAILED and meta.timeout_seconds > 0 and DEADLINE_EXCEEDED in reason:
        # The kubelet ended the pod at its activeDeadlineSeconds before our own check saw the run
        # go over: the same timeout, reported the same way.
        message = (
            f"TaskTimeout: Armada {where} exceeded the task's timeout of {meta.timeout_seconds:g}s running "
            f"(the pod's deadline): {reason}"
        )
        error = ErrorInfo("TaskTimeout", "USER", True, message)
        return _failed(TaskExecution.RETRYABLE_FAILED, state, message, node, facts, error)
    if state == JobState.FAILED and reason.startswith(LEASE_EXPIRED):
        # The run was lost with its executor, not failed by the task: another attempt may well succeed.
        message = (
            f"LeaseExpired: Armada {where} lost its executor (Armada's reason: {reason}): the executor stopped "
            "reporting for longer than the scheduler's executorTimeout (SYSTEM error)"
        )
        error = ErrorInfo("LeaseExpired", "SYSTEM", True, message)
        return _failed(TaskExecution.RETRYABLE_FAILED, state, message, node, facts, error)
    if state == JobState.FAILED and OOM_KILLED in reason:
        # a0 was killed before it could write error.pb: the user's code, and the task's memory, to act on.
        # Armada's reason only where it says more than the sizes read from it (the message repeated them before).
        sizes = _sizes_in(reason)
        said = f"; Armada's reason: {reason}" if "(it used" not in sizes else ""
        message = f"OOMKilled: Armada {where} went over the task's memory limit{sizes}{said}"
        error = ErrorInfo(OOM_KILLED, "USER", True, message)
        return _failed(TaskExecution.RETRYABLE_FAILED, state, message, node, facts, error)
    label = {
        JobState.REJECTED: "was rejected by Armada",
        JobState.CANCELLED: "was cancelled",
    }.get(state, "failed")
    message = f"Armada {where} {label}" + (f": {reason}" if reason else "")
    if state == JobState.FAILED and (crash := wrong_architecture(reason, meta.image, facts.get("architecture") or "")):
        message = _explained(crash, message, facts)
    if state == JobState.REJECTED and rules.node_groups is not None:
        if fix := explain_rejection(reason, rules.node_groups, meta.node_group):
            facts["fix"] = fix
            message += f"\nTo fix: {fix}"
    return JobOutcome(phase_of(state), state, message, None, node, facts)


def _reason_may_come(meta: ArmadaJobMetadata, seen: Observed) -> bool:
    """Whether Armada may still be writing the job's reason: within REASON_WAIT_SECONDS of its run's end,
    or of its submit when no end is known (a rejected job has no run)."""
    ended = (seen.details.finished_at if seen.details else 0.0) or meta.submitted_at
    return bool(ended) and seen.now - ended < REASON_WAIT_SECONDS


def _sizes_in(reason: str) -> str:
    """` of 256Mi (it used 700Mi)` when Armada's reason gives the limit and the most used in bytes (the
    embedded server's does), as much of it as the reason gives, else nothing."""
    limit, seen = _BYTES_LIMIT.search(reason), _BYTES_SEEN.search(reason)
    said = f" of {_mebibytes(int(limit.group(1)))}" if limit else ""
    return said + (f" (it used {_mebibytes(int(seen.group(1)))})" if seen else "")


def _mebibytes(size: int) -> str:
    return f"{size / 2**20:.0f}Mi" if size >= 2**20 else f"{size} bytes"


def _failed(phase: int, state: int, message: str, node: str, facts: dict[str, Any], error: ErrorInfo) -> JobOutcome:
    return JobOutcome(phase, state, message, None, node, facts, error)


def _timed_out(
    meta: ArmadaJobMetadata,
    state: int,
    facts: dict[str, Any],
    now: float,
    limit: float,
    doing: str,
    why: str = "",
) -> JobOutcome:
    """A job over its limit, reported as timed out and to be cancelled: retryable, as Flyte's
    per-attempt timeouts are (`retries=` decides whether another attempt runs)."""
    message = (
        f"TaskTimeout: Armada job {meta.job_id} exceeded the task's timeout of {limit:g}s {doing} "
        f"(it was {state_name(state)}); the job was cancelled"
    )
    if meta.gang_id and state in QUEUED_STATES:
        message += _gang_wait(meta, now)
    message += why
    error = ErrorInfo("TaskTimeout", "USER", True, message)
    return JobOutcome(TaskExecution.RETRYABLE_FAILED, state, message, facts=facts, error=error, cancel=True)


def _why_queued(report: Optional[QueuedReport], facts: dict[str, Any]) -> str:
    """The gist of Armada's scheduling report, when one was asked for (the report goes to `facts`)."""
    if report is None:
        return ""
    facts["queued_report"] = report.info
    return f"; why: {report.message}" if report.message else ""


def _landed(meta: ArmadaJobMetadata, node: str, facts: dict[str, Any], node_groups: Optional[NodeGroups]) -> str:
    """For `any`: record where the job ran in `facts`, and say it for the message."""
    any_of = meta.any_of.split(",")
    landing = landing_of(any_of, node, node_groups)
    facts.update(landing.info(any_of))
    return landing.describe()


def _explained(crash: WrongArchitecture, message: str, facts: dict[str, Any]) -> str:
    """The crash said as the missing image variant, before what Armada or a0 reported; the fix as for a rejection."""
    facts["wrong_architecture"] = crash.as_info()
    facts["fix"] = crash.fix()
    return f"{crash.says()}: {message.rstrip()}\nTo fix: {crash.fix()}"


def over_limit(limit: float, since: float, now: float) -> bool:
    """More than `limit` seconds have passed since `since` (either 0: no limit, or not known)."""
    return limit > 0 and since > 0 and now - since > limit


def _gang_wait(meta: ArmadaJobMetadata, now: float) -> str:
    """Why a gang member sits in the queue: Armada starts no member until all are submitted."""
    waited = now - meta.submitted_at if meta.submitted_at else 0.0
    bound = (
        f"it fails once queued for the task's timeout of {meta.queued_timeout_seconds:g}s"
        if meta.queued_timeout_seconds
        else "no timeout is set, so it waits until cancelled: set timeout= on the task to bound it"
    )
    return (
        f"; waiting {waited:.0f}s for gang {meta.gang_id}: Armada starts none of its {meta.gang_cardinality} "
        f"members until all are submitted and fit at once (if fewer than {meta.gang_cardinality} tasks "
        f"use gang_id, it never starts; {bound})"
    )
