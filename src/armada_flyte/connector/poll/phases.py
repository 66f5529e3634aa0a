"""How Armada job states read as Flyte task phases."""

from __future__ import annotations

from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.armada_names import JobState

PHASE_OF_STATE = {
    JobState.QUEUED: TaskExecution.QUEUED,
    JobState.SUBMITTED: TaskExecution.QUEUED,
    JobState.LEASED: TaskExecution.QUEUED,
    JobState.PENDING: TaskExecution.INITIALIZING,
    JobState.RUNNING: TaskExecution.RUNNING,
    JobState.UNKNOWN: TaskExecution.QUEUED,  # not visible yet: never ahead of what it reads next; ack timeout bounds it
    JobState.SUCCEEDED: TaskExecution.SUCCEEDED,
    JobState.FAILED: TaskExecution.FAILED,
    JobState.REJECTED: TaskExecution.FAILED,  # never schedulable: retrying can't help
    JobState.CANCELLED: TaskExecution.ABORTED,
    JobState.PREEMPTED: TaskExecution.RETRYABLE_FAILED,  # normal under fair share: let Flyte retry
}

TERMINAL_PHASES = frozenset(
    {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED, TaskExecution.ABORTED}
)


def phase_of(state: int) -> int:
    """The Flyte phase for an Armada state; an unrecognised state keeps polling (RUNNING)."""
    return PHASE_OF_STATE.get(state, TaskExecution.RUNNING)


def state_name(state: int) -> str:
    return JobState.name_of(state)
