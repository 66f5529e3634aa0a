"""Waiting on conditions with a deadline: tests poll for what they expect, never sleep a fixed time."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

import grpc
from armada_client.armada import job_pb2, submit_pb2
from armada_client.client import ArmadaClient

T = TypeVar("T")
DEFAULT_TIMEOUT = 60.0
"""Long enough for a pod's process to start on a machine busy with other builds; a bound on failures only."""
TERMINAL = {submit_pb2.SUCCEEDED, submit_pb2.FAILED, submit_pb2.CANCELLED, submit_pb2.PREEMPTED, submit_pb2.REJECTED}


def wait_until(condition: Callable[[], T], timeout: float = DEFAULT_TIMEOUT, what: str = "the condition") -> T:
    """The first truthy value of `condition()`, polled until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    interval = 0.005
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
        interval = min(interval * 2, 0.1)


def state_of(client: ArmadaClient, job_id: str) -> int:
    return client.get_job_status([job_id]).job_states[job_id]


def wait_for_state(client: ArmadaClient, job_id: str, *states: int, timeout: float = DEFAULT_TIMEOUT) -> int:
    """Wait until the job is in one of `states`; fail early if it ends in another terminal state."""
    wanted = set(states)

    def reached() -> int | None:
        state = state_of(client, job_id)
        if state in wanted:
            return state
        if state in TERMINAL:
            errors = client.get_job_errors([job_id]).job_errors.get(job_id, "")
            raise AssertionError(
                f"job {job_id} ended {submit_pb2.JobState.Name(state)}, not {_names(wanted)}: {errors}"
            )
        return None

    return wait_until(reached, timeout, f"job {job_id} to be {_names(wanted)}")  # type: ignore[return-value]


def job_error(client: ArmadaClient, job_id: str, timeout: float = 30.0) -> str:
    """The ended job's error, once Armada has it: real Armada's query API can show a job FAILED or REJECTED
    a moment before its ingester has written the run's error (both come from its lookout database)."""
    return wait_until(
        lambda: client.get_job_errors([job_id]).job_errors.get(job_id, ""), timeout, f"the error of job {job_id}"
    )


def stored_job(client: ArmadaClient, job_id: str, timeout: float = 30.0) -> job_pb2.JobDetails:
    """GetJobDetails of one job with its spec, once Armada's query side has the job whole.

    Real Armada's lookout ingester writes a new job's row and its spec in two transactions side by side
    (`Store`, internal/lookoutingester/lookoutdb/insertion.go): for a moment GetJobDetails finds the job
    without its spec and fails UNKNOWN "unexpected EOF" (the query API decompresses nothing). That moment
    is waited out like the job's absence before it."""
    request = job_pb2.JobDetailsRequest(job_ids=[job_id], expand_job_spec=True)

    def stored() -> job_pb2.JobDetails | None:
        try:
            return client.job_stub.GetJobDetails(request).job_details.get(job_id)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.UNKNOWN and "unexpected EOF" in (exc.details() or ""):
                return None
            raise

    return wait_until(stored, timeout, f"job {job_id} with its spec in GetJobDetails")


def _names(states: set[int]) -> str:
    return " or ".join(sorted(submit_pb2.JobState.Name(s) for s in states))


def wait_for_a_scheduling_pass(client: ArmadaClient, queue: str, job_set: str) -> None:
    """Return once the scheduler has considered everything submitted so far.

    Submits a job no node can ever take and waits for its rejection: the pass that rejects it
    has also tried every job submitted before it. A way to assert "still QUEUED" without sleeping.
    """
    from support.pods import item, pod, submit_one

    sentinel = submit_one(client, queue, job_set, item(pod(cpu="1000")))
    wait_for_state(client, sentinel, submit_pb2.REJECTED)
