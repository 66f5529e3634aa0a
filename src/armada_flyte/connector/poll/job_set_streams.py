"""The status view's vocabulary for job-set event streams: the state each event moves a job to, what
the events say about the job's run (`RunFacts`), and the modes a job set's stream goes through (with
the one table of how events move them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, NamedTuple, Optional

from armada_client.armada import event_pb2

from armada_flyte.armada_names import GANG_ID, TERMINAL_STATES, JobState

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


_RUN_STARTS_AGAIN = frozenset({"queued", "lease_returned", "lease_expired"})
"""Events after which the job's next run is a new one: what was known of the last run no longer holds."""
_ENDS = frozenset({"succeeded", "failed", "cancelled", "preempted"})
_SAYS_NOTHING_OF_THE_RUN = frozenset({"submitted"})
"""Events that carry no run facts (no node, start or end): every new job's first, so read in one step."""


def state_after(kind: str, event: Any) -> Optional[int]:
    """The state an event of `kind` moves its job to (None: none). A failed event is not always the job's end:
    a rejection reads REJECTED, and a run failure Armada will run again (`retryable`: its retry policy
    requeued the job, Armada 0.22) reads QUEUED, since the next events are the new run's."""
    if kind == "failed":
        if _run_failed_retryably(kind, event):
            return JobState.QUEUED
        if event.cause == event_pb2.Rejected:
            return JobState.REJECTED
    return STATE_OF_EVENT.get(kind)


def _run_failed_retryably(kind: str, event: Any) -> bool:
    return kind == "failed" and bool(getattr(event, "retryable", False))


@dataclass(frozen=True)
class RunFacts:
    """What a job set's events said about a job's latest run: what GetJobDetails and GetJobErrors would
    answer, known without asking. Real Armada's failed events carry exit codes in
    `container_statuses[].exitCode` (their `exit_codes` stays empty), so both are read."""

    node: str = ""
    cluster: str = ""
    started_at: float = 0.0
    """When the running event was published (seconds since the epoch; 0: not seen)."""
    ended: bool = False
    """The event that ended the job was seen."""
    finished_at: float = 0.0
    """When that event was published (seconds since the epoch; 0: not reported)."""
    reason: Optional[str] = None
    """The failure (or preemption) reason the events gave; None: they gave none, so it must be asked for."""
    exit_codes: tuple[tuple[str, int], ...] = ()
    """(container, exit code) of every container the failed event lists."""
    failure_category: str = ""
    """The failed event's `failure_category`: the executor's category for the failure, when its admin configured
    error categories (Armada 0.22, JobFailedEvent field 16); only the events carry it, not GetJobDetails."""

    def covers(self, state: int) -> bool:
        """Whether these facts stand in for GetJobDetails in `state`: its end was seen, or a running job's start.
        A success without a node does not: real Armada's succeeded event never names one (the scheduler's
        JobSucceeded carries no resource infos, internal/server/event/conversion/conversions.go), so only the
        running event does, and Armada's executor sends none for a pod it first saw already finished; then
        GetJobDetails has the node from the lease (internal/lookoutingester/instructions/instructions.go)."""
        if state == JobState.SUCCEEDED:
            return self.ended and bool(self.node)
        if state in TERMINAL_STATES:
            return self.ended
        return state == JobState.RUNNING and self.started_at > 0

    def after(self, kind: str, event: Any) -> RunFacts:
        """These facts once an event of `kind` (an `EventMessage` oneof field name) for the job arrived."""
        if kind in _SAYS_NOTHING_OF_THE_RUN:
            return self
        if kind in _RUN_STARTS_AGAIN or _run_failed_retryably(kind, event):
            return NO_RUN_FACTS
        created = event.created.seconds + event.created.nanos / 1e9 if event.HasField("created") else 0.0
        facts = self
        node = getattr(event, "node_name", "")
        if node:
            facts = replace(facts, node=node, cluster=getattr(event, "cluster_id", "") or facts.cluster)
        if kind == "running":
            facts = replace(facts, started_at=created or facts.started_at)
        if kind not in _ENDS:
            return facts
        if not facts.ended:
            facts = replace(facts, ended=True, finished_at=created)
        # A rejection's reason is left to GetJobErrors: the text the fixes are read from is documented there.
        rejected = kind == "failed" and event.cause == event_pb2.Rejected
        if kind in ("failed", "preempted") and event.reason and facts.reason is None and not rejected:
            facts = replace(facts, reason=event.reason)
        if kind == "failed":
            codes = [(status.name, status.exitCode) for status in event.container_statuses]
            codes += [(name, code) for name, code in event.exit_codes.items() if name not in dict(codes)]
            facts = replace(facts, exit_codes=tuple(codes) or facts.exit_codes)
            category = getattr(event, "failure_category", "")
            if category and not facts.failure_category:
                facts = replace(facts, failure_category=category)
        return facts


NO_RUN_FACTS = RunFacts()
"""Nothing known of the run (shared: the facts are frozen)."""


class JobEvent(NamedTuple):
    """One event that moves a job: its kind (an `EventMessage` oneof field name), the event, the state it moves
    to, its job. A tuple: two of them are made for every job a stream brings."""

    kind: str
    event: Any
    state: int
    job_id: str


def job_event_of(message: event_pb2.EventStreamMessage) -> Optional[JobEvent]:
    """The job event a stream message carries, its state as `state_after` reads it, or None for kinds that
    move no job."""
    kind = message.message.WhichOneof("events") or ""
    if kind not in STATE_OF_EVENT:
        return None
    event = getattr(message.message, kind)
    return JobEvent(kind, event, state_after(kind, event), event.job_id)


def jobs_in(messages: list[event_pb2.EventStreamMessage]) -> dict[str, tuple[int, RunFacts]]:
    """Each job's state and run facts after a job set's events, read in order (an ended job stays ended)."""
    jobs: dict[str, tuple[int, RunFacts]] = {}
    for message in messages:
        moved = job_event_of(message)
        if moved is None:
            continue
        state, run = jobs.get(moved.job_id, (moved.state, RunFacts()))
        state = state if state in TERMINAL_STATES else moved.state
        jobs[moved.job_id] = (state, run.after(moved.kind, moved.event))
    return jobs


class GangMember(NamedTuple):
    """One job of a gang as its job set's events tell it: its id, its state, what they said of its latest run."""

    job_id: str
    state: int
    run: RunFacts


def gang_of(moved: JobEvent) -> str:
    """The gang id a submitted event's job carries in its annotations ("" for other events and jobs in no gang).
    Real Armada keeps the submitted job's annotations in the event (v0.22.7 internal/common/eventutil/eventutil.go,
    ApiJobFromLogSubmitJob), so a job set's events say which of its jobs form each gang."""
    if moved.kind != "submitted" or not moved.event.HasField("job"):
        return ""
    return moved.event.job.annotations.get(GANG_ID, "")


def client_id_of(moved: JobEvent) -> str:
    """The client id a submitted event's job carries ("" for other events). Real Armada keeps the submit's
    deduplication id there (v0.22.7 internal/common/eventutil/eventutil.go, ApiJobFromLogSubmitJob), as the embedded
    server does: a job set's events say which of a preference's steps were submitted."""
    if moved.kind != "submitted" or not moved.event.HasField("job"):
        return ""
    return moved.event.job.client_id


@dataclass
class Submissions:
    """In what order a job set's events submitted jobs (by client id) and ended them: whether a job was submitted
    before another ended, whatever the clocks say."""

    submitted: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Each client id's job and the position of its submitted event."""
    ended: dict[str, int] = field(default_factory=dict)
    """The position of each job's ending event."""
    seen: int = 0

    def note(self, moved: JobEvent) -> None:
        """One more event of the job set, in order."""
        self.seen += 1
        if client_id := client_id_of(moved):
            self.submitted.setdefault(client_id, (moved.job_id, self.seen))
        elif moved.state in TERMINAL_STATES:
            self.ended.setdefault(moved.job_id, self.seen)

    def before_end(self, client_id: str, earlier: str) -> str:
        """The job submitted with `client_id` before the `earlier` job ended (or while it has not), else ""."""
        job_id, at = self.submitted.get(client_id, ("", 0))
        return job_id if job_id and at < self.ended.get(earlier, self.seen + 1) else ""


def submissions_in(messages: list[event_pb2.EventStreamMessage]) -> Submissions:
    """The order of a job set's submits and ends, as its events tell it."""
    found = Submissions()
    for message in messages:
        if (moved := job_event_of(message)) is not None:
            found.note(moved)
    return found


def gangs_in(messages: list[event_pb2.EventStreamMessage]) -> dict[str, str]:
    """Each job's gang id, for the jobs of a job set's events that are in a gang."""
    gangs = {}
    for message in messages:
        moved = job_event_of(message)
        if moved is not None and (gang := gang_of(moved)):
            gangs[moved.job_id] = gang
    return gangs


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
