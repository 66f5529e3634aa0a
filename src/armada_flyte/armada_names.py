"""Armada's own names, numbers and limits, shared by the connector and the embedded server.

One constant each, so the connector and the embedded server can never disagree on them.
"""

from __future__ import annotations

import enum

GANG_ID = "armadaproject.io/gangId"
GANG_CARDINALITY = "armadaproject.io/gangCardinality"
GANG_UNIFORMITY_LABEL = "armadaproject.io/gangNodeUniformityLabel"

MAX_IDS_PER_CALL = 500
"""Armada answers at most this many job ids per status, errors or details call."""
MAX_JOB_SET_ID = 1023
"""Armada refuses job set ids of 1024 characters or more."""


class JobState(enum.IntEnum):
    """A job's state, numbered as `JobState` in Armada's submit.proto."""

    QUEUED = 0
    PENDING = 1
    RUNNING = 2
    SUCCEEDED = 3
    FAILED = 4
    UNKNOWN = 5
    SUBMITTED = 6
    LEASED = 7
    PREEMPTED = 8
    CANCELLED = 9
    REJECTED = 10

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @classmethod
    def name_of(cls, value: int) -> str:
        """The state's name, also for a number this enum doesn't know (`STATE_42`)."""
        try:
            return cls(value).name
        except ValueError:
            return f"STATE_{value}"


TERMINAL_STATES = frozenset(
    {JobState.SUCCEEDED, JobState.FAILED, JobState.PREEMPTED, JobState.CANCELLED, JobState.REJECTED}
)
"""States a job never leaves."""
REASON_STATES = frozenset({JobState.FAILED, JobState.REJECTED, JobState.PREEMPTED})
"""Ends Armada gives a reason for (GetJobErrors, and the failed or preempted event)."""
