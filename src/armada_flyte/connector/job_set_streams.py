"""The status view's vocabulary for job-set event streams: the state each event moves a job to, and
the modes a job set's stream goes through (with the one table of how events move them)."""

from __future__ import annotations

from enum import Enum

from armada_flyte.armada_names import JobState

STATE_OF_EVENT = {
    "submitted": JobState.SUBMITTED,
    "queued": JobState.QUEUED,
    "lease_returned": JobState.QUEUED,
    "lease_expired": JobState.QUEUED,
    "leased": JobState.LEASED,
    "pending": JobState.PENDING,
    "running": JobState.RUNNING,
    "succeeded": JobState.SUCCEEDED,
    "failed": JobState.FAILED,
    "cancelled": JobState.CANCELLED,
    "preempted": JobState.PREEMPTED,
}
"""The state an event kind moves a job to; other kinds (utilisation, cancelling, ...) change nothing."""


class StreamEvent(Enum):
    """What happens to a job set's event stream."""

    STARTED = "started"
    CAUGHT_UP = "caught up"
    LOST = "lost"
    """It failed, or the server ended the watch: its jobs are polled in bulk until it is back."""


class StreamMode(Enum):
    """How the view learns a job set's states."""

    BULK = "bulk"
    """No stream (none allowed, or none free): bulk GetJobStatus only."""
    SYNCING = "syncing"
    """The stream reads the job set's past; gets wait for it."""
    LIVE = "live"
    """The stream is caught up and watching."""
    DOWN = "down"
    """The stream broke or ended; bulk polls cover its jobs while it reconnects."""

    def after(self, event: StreamEvent) -> StreamMode:
        """The mode once `event` happened in this one (an event that doesn't apply changes nothing)."""
        return _NEXT_MODE.get((self, event), self)


_NEXT_MODE = {
    (StreamMode.BULK, StreamEvent.STARTED): StreamMode.SYNCING,
    (StreamMode.SYNCING, StreamEvent.CAUGHT_UP): StreamMode.LIVE,
    (StreamMode.DOWN, StreamEvent.CAUGHT_UP): StreamMode.LIVE,
    (StreamMode.SYNCING, StreamEvent.LOST): StreamMode.DOWN,
    (StreamMode.LIVE, StreamEvent.LOST): StreamMode.DOWN,
}
