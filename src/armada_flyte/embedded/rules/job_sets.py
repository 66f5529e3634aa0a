"""Armada's checks on requests that act on a job set (cancel, preempt, reprioritize), in its wording.

From internal/server/submit/validation/job_set.go and submit/submit.go: the reason is at most
50 bytes, queue and job set must be named, and a job-set cancel filters by PENDING and RUNNING
only together. Broken names and reasons are INVALID_ARGUMENT; a broken filter is a plain error,
which gRPC sends as UNKNOWN.
"""

from __future__ import annotations

from typing import Iterable

from armada_flyte.armada_names import JobState
from armada_flyte.embedded.model.refusals import Refusal, invalid_field

MAX_REASON_BYTES = 50


def check_reason(reason: str) -> None:
    raw = reason.encode()
    if len(raw) > MAX_REASON_BYTES:
        shown = raw[:MAX_REASON_BYTES].decode(errors="ignore") + "..."
        raise invalid_field("Reason", shown, f"reason cannot be longer than {MAX_REASON_BYTES} bytes")


def check_job_set(queue: str, job_set: str) -> None:
    if not queue:
        raise invalid_field("Queue", queue, "queue cannot be empty")
    if not job_set:
        raise invalid_field("JobSetId", job_set, "jobset cannot be empty")


def unique_ids(job_ids: Iterable[str]) -> list[str]:
    return [i for i in dict.fromkeys(job_ids) if i]


def job_set_key(job_set: str) -> str:
    """The one result key of a job-set reprioritization (`ReprioritizeJobs` in submit/submit.go)."""
    return f"all jobs in job set {job_set}"


def cancellable_states(states: Iterable[int]) -> frozenset[JobState]:
    """The job states a CancelJobSet filter cancels.

    PENDING and RUNNING must come together; together they cancel every job with a run (LEASED
    too), and any other state number means QUEUED (the API maps only QUEUED, PENDING and
    RUNNING; internal/scheduleringester/instructions.go decides what is cancelled). No states
    cancels everything.
    """
    given = set(states)
    if (JobState.PENDING in given) != (JobState.RUNNING in given):
        raise Refusal("unsupported state combination - state PENDING and RUNNING must always be used together")
    with_runs = frozenset({JobState.LEASED, JobState.PENDING, JobState.RUNNING})
    if not given:
        return with_runs | {JobState.QUEUED}
    wanted = with_runs if JobState.PENDING in given else frozenset()
    if given - {JobState.PENDING, JobState.RUNNING}:
        wanted |= {JobState.QUEUED}
    return wanted
