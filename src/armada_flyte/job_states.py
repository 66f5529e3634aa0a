"""How Armada job states read as Flyte task phases."""

from __future__ import annotations

from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte  # noqa: F401  (aliases google.api protos before armada_client loads)
from armada_client.armada import submit_pb2

S = submit_pb2

PHASE_OF_STATE = {
    S.QUEUED: TaskExecution.QUEUED,
    S.SUBMITTED: TaskExecution.QUEUED,
    S.LEASED: TaskExecution.QUEUED,
    S.PENDING: TaskExecution.INITIALIZING,
    S.RUNNING: TaskExecution.RUNNING,
    S.UNKNOWN: TaskExecution.RUNNING,  # transient right after submit; bounded by the ack timeout
    S.SUCCEEDED: TaskExecution.SUCCEEDED,
    S.FAILED: TaskExecution.FAILED,
    S.REJECTED: TaskExecution.FAILED,  # never schedulable: retrying can't help
    S.CANCELLED: TaskExecution.ABORTED,
    S.PREEMPTED: TaskExecution.RETRYABLE_FAILED,  # normal under fair share: let Flyte retry
}

TERMINAL_STATES = frozenset({S.SUCCEEDED, S.FAILED, S.REJECTED, S.CANCELLED, S.PREEMPTED})
TERMINAL_PHASES = frozenset(
    {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED, TaskExecution.ABORTED}
)


def phase_of(state: int) -> int:
    """The Flyte phase for an Armada state; an unrecognised state keeps polling (RUNNING)."""
    return PHASE_OF_STATE.get(state, TaskExecution.RUNNING)


def state_name(state: int) -> str:
    try:
        return submit_pb2.JobState.Name(state)
    except ValueError:
        return f"STATE_{state}"
