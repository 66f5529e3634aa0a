"""What a poll does: one pure function from what is known of a task's jobs to Flyte's answer and the
actions to take.

`decide(known, rules)` answers either what to learn first (`Decision.fetch`: a job's state, its job
set's events, its run's details, a0's error file, Armada's reason, the scheduler's report, a later
step's job, whether a later step's job was submitted before a step's job ended) or Flyte's outcome with the
actions to carry out (`Decision.actions`: cancel a job over its time limit, spill a job that waits for room,
cancel a queued job moved on from at once). `service.py` fetches what it asks for (`gather.py`) and asks again,
then carries out the actions; nothing here does I/O. Everything it reads comes from the
metadata Flyte persists and from Armada, so any replica can answer any poll.

A task has one job per step of its architecture preference (one step without a preference). The
current step is the first whose job the task did not move on from (`_moved_on`: one row per way to move
on: a spill after `spill_after`, or at once a rejection no node of the group can lift or a run that failed
for a platform mismatch, its own or, for a gang member, a sibling's of its step, or a queued job whose node
group has no node left, `moves.py`); `get_logs` asks `current_job` the same. A gang member whose sibling failed
that way has its own job cancelled (`moves.GANG_MOVE_REASON`) and moves on once Armada says CANCELLED; a member
moving on so holds its next step until every member of its step's gang has ended, and its next gang leaves out
those that succeeded (`moves.next_gang`). A queued job whose group has no node left has the next step's job
submitted first, then its own cancelled (`moves.QUEUED_MOVE_REASON`): the job set's events, in order, then tell
any replica it moved on. The current job's facts come in rounds
(`_wanted`): its state; the job set's events when the job status API does not know it past the ack window;
then the scheduler's report, the run's details and a0's error file, each only when the answer depends on it;
then Armada's reason for a failure a0 explained nothing about. `outcome.outcome_of` words the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Optional, Union

from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.armada_names import TERMINAL_STATES, JobState
from armada_flyte.connector.model.metadata import ArmadaJobMetadata, Step
from armada_flyte.connector.model.run_details import RunDetails
from armada_flyte.connector.model.task_error import TaskError
from armada_flyte.connector.poll import moves, spill
from armada_flyte.connector.poll.job_set_streams import GangMember, RunFacts
from armada_flyte.connector.poll.moves import GangWait, Move
from armada_flyte.connector.poll.outcome import (
    ERROR_FILE_STATES,
    RUN_STATES,
    JobOutcome,
    Observed,
    Rules,
    needs_reason,
    outcome_of,
    over_limit,
    refused,
)
from armada_flyte.connector.poll.phases import state_name
from armada_flyte.connector.poll.queued_report import QueuedReport

TIMEOUT_REASON = "task timeout exceeded"
"""The reason sent with the cancel of a job over its time limit."""


class Fact(Enum):
    """What a poll can learn about one step's job."""

    STATE = "state"
    """Armada's state (the status view: memory, or a bulk call shared with other polls), and what the job
    set's events said of its run."""
    EVENTS = "events"
    """The job set's events: for a job the job status API does not know past the ack window."""
    JOB = "job"
    """A later step's job id: its submit, which Armada answers with the job it has for a step submitted
    before (by this replica or another: the step's client id is fixed at create)."""
    DETAILS = "details"
    """Where and when the job's latest run went."""
    ERROR_FILE = "error file"
    """a0's error.pb."""
    REASON = "reason"
    """Armada's error for the job."""
    REPORT = "report"
    """The scheduler's report of why the job waits."""
    GANG = "gang"
    """For a gang member with a later step: the jobs of its step's gang, as the job set's events tell them."""
    NEXT = "next"
    """For a step with a later step, in no gang: the later step's job, if the job set's events say it was submitted
    before this step's job ended (a move at once while queued), and whether they hold that end yet."""


@dataclass(frozen=True)
class Fetch:
    step: int
    fact: Fact
    max_age: float = 0.0
    """For a report: how old a kept one may be."""
    gang_size: int = 0
    """For a later step's job: the gang cardinality to submit it with, when members of the gang it moved from
    had succeeded (0: as create built it)."""


@dataclass(frozen=True)
class JobFacts:
    """What is known of one step's job; each fact None (or not read) until fetched."""

    job_id: str = ""
    state: Optional[int] = None
    run: Optional[RunFacts] = None
    """What the job set's events said of its latest run (None: the status view holds none)."""
    events_read: bool = False
    from_events: bool = False
    """The state (and run) are the job set's events', the job status API not knowing the job."""
    events_unreadable: str = ""
    details_read: bool = False
    details: Optional[RunDetails] = None
    error_read: bool = False
    task_error: Optional[TaskError] = None
    error_unreadable: str = ""
    reason: Optional[str] = None
    report: Optional[QueuedReport] = None
    gang: Optional[tuple[GangMember, ...]] = None
    """The jobs of the step's gang, their states and runs (None: not read)."""
    next_job: Optional[str] = None
    """The next step's job submitted before this one ended ("": none; None: not read)."""
    end_in_events: bool = False
    """The job set's events hold this job's end (read with `next_job`)."""


@dataclass(frozen=True)
class Known:
    """What a poll knows so far: the metadata, its time, each step's job reached so far (the first is the
    one create submitted) and the phase this process last reported for the task."""

    meta: ArmadaJobMetadata
    now: float
    steps: tuple[Step, ...]
    jobs: tuple[JobFacts, ...]
    previous_phase: Optional[int] = None

    @classmethod
    def of(cls, meta: ArmadaJobMetadata, now: float, previous_phase: Optional[int] = None) -> Known:
        """Nothing learnt yet."""
        return cls(meta, now, meta.steps(), (JobFacts(meta.job_id),), previous_phase)

    def learnt(self, step: int, facts: JobFacts) -> Known:
        """These facts of the step's job (a step just reached adds its job)."""
        jobs = self.jobs[:step] + (facts,) + self.jobs[step + 1 :]
        return replace(self, jobs=jobs)


@dataclass(frozen=True)
class Cancel:
    """Cancel one job."""

    job_id: str
    reason: str


@dataclass(frozen=True)
class Spill:
    """Cancel the queued jobs of the task's job set (its own), so the step that waits for room is moved on
    from once Armada says CANCELLED."""

    job_id: str
    """The job that waits (a spill's cancel is sent again only after a pause: `spill.SpillCancels`)."""
    reason: str = spill.SPILL_REASON


Action = Union[Cancel, Spill]


@dataclass(frozen=True)
class Decision:
    """The current step and its job; then either what to fetch, or Flyte's answer and what to carry out."""

    step: int = 0
    job_id: str = ""
    fetch: tuple[Fetch, ...] = ()
    outcome: Optional[JobOutcome] = None
    actions: tuple[Action, ...] = ()
    moved: Optional[Move] = None
    """How the task moved on to its current step (None on the first)."""
    since: float = 0.0
    """When the current step's job was submitted, as the steps before tell (0 on the first: create's time)."""
    gang_size: int = 0
    """For a gang member: the current step's gang size (the task's, less the members that succeeded on a step
    it moved on from)."""
    holding: Optional[GangWait] = None
    """A gang member moving on from the current step while members of its gang there are still in flight."""
    left: tuple[str, ...] = ()
    """Jobs of earlier steps moved on from at once that have not ended (their cancel did not go through yet)."""
    hold: str = ""
    """Why the poll cannot tell yet whether the task moved on from its current step's cancelled job."""


def decide(known: Known, rules: Rules) -> Decision:
    """The poll's next move: the facts to fetch, or Flyte's answer and the actions it takes."""
    meta = known.meta
    if meta.refusal_code or not meta.job_id:
        return Decision(outcome=refused(meta))
    where = current_job(known, rules)
    if where.fetch:
        return where
    step, job = known.steps[where.step], known.jobs[where.step]
    if where.holding is not None:
        return _holding(known, where, where.holding)
    if job.state is None:
        return replace(where, fetch=(Fetch(where.step, Fact.STATE),))
    job_meta = meta.for_step(step, job.job_id, where.since, where.gang_size)
    last = len(known.steps) - 1
    gang_moves = where.step < last and bool(job_meta.gang_id) and job.state in moves.GANG_CANCELLABLE
    if gang_moves and job.gang is None:
        return replace(where, fetch=(Fetch(where.step, Fact.GANG),))
    due = spill.spill_due(job_meta, step, last, job.state, known.now)
    wanted = _wanted(where.step, job_meta, job, known.now, rules, report_wanted=due)
    if wanted:
        return replace(where, fetch=wanted)
    if where.hold:
        return replace(where, outcome=_held(known, job_meta, where.hold))
    outcome = replace(outcome_of(job_meta, _observed(job, known), rules), report=job.report)
    actions: tuple[Action, ...] = (Cancel(job.job_id, TIMEOUT_REASON),) if outcome.cancel else ()
    actions += tuple(Cancel(left, moves.QUEUED_MOVE_REASON) for left in where.left)
    moving = (
        where.step < last
        and outcome.state == JobState.QUEUED
        and not outcome.cancel
        and moves.moves_while_queued(job_meta, job.report, known.now - job_meta.submitted_at)
    )
    if moving and len(known.jobs) <= where.step + 1:  # the next step's job first: then this one's cancel
        return replace(where, fetch=(Fetch(where.step + 1, Fact.JOB),))
    if last:
        message = moves.moved_message(known.steps, step, where.moved, meta.spill_after_seconds)
        sibling = (
            moves.sibling_mismatch(job.job_id, job.gang or (), rules.platform_mismatch_categories)
            if gang_moves
            else None
        )
        if sibling is not None:
            message = moves.gang_moving_message(known.steps, step, sibling)
            actions += (Cancel(job.job_id, moves.GANG_MOVE_REASON),)
        elif moving and job.report is not None:
            message = moves.queued_moving_message(known.steps, step, job.report)
            actions += (Cancel(job.job_id, moves.QUEUED_MOVE_REASON),)
        elif due and spill.spill_helps(job.report) and outcome.state == JobState.QUEUED:
            message = spill.spilling_message(known.steps, step, meta)
            actions += (Spill(job.job_id),)
        outcome = replace(
            outcome,
            message=f"{message}; {outcome.message}" if message else outcome.message,
            facts={
                **outcome.facts,
                **spill.spill_info(known.steps, meta),
                **moves.move_info(known.steps, step, where.moved, meta.spill_after_seconds),
            },
        )
    return replace(where, outcome=outcome, actions=actions)


def current_job(known: Known, rules: Optional[Rules] = None) -> Decision:
    """The step the task has reached and its job (or what to fetch to tell): past every step it moved on from.
    `rules`: the poll's (the admin's platform-mismatch categories, when a report may have moved a queued job);
    None reads none. A gang member's gang size goes along the walk: each platform mismatch it moved on for leaves
    out the members that had succeeded."""
    moved: Optional[Move] = None
    since, size = known.meta.submitted_at, known.meta.gang_cardinality
    left: tuple[str, ...] = ()
    for index in range(len(known.steps) - 1):
        job = known.jobs[index]
        at = Decision(index, job.job_id, moved=moved, since=since if index else 0.0, gang_size=size, left=left)
        if job.state is None:
            return replace(at, fetch=(Fetch(index, Fact.STATE),))
        step_meta = known.meta.for_step(known.steps[index], job.job_id, since, size)
        found = _moved_on(step_meta, job, known.now, rules)
        if isinstance(found, Fact):
            return replace(at, fetch=(Fetch(index, found),))
        if isinstance(found, str):
            return replace(at, hold=found)
        if found is None:
            return at
        if step_meta.gang_id and found.kind == moves.PLATFORM_MISMATCH:  # the gang ran: members may have succeeded
            if job.gang is None:
                return replace(at, fetch=(Fetch(index, Fact.GANG),))
            after = moves.next_gang(size, job.job_id, job.gang, found)
            if isinstance(after, GangWait):
                return replace(at, holding=after)
            found = replace(found, gang_size=after.size, gang_done=after.done)
            size = after.size
        if job.state not in TERMINAL_STATES:
            left += (job.job_id,)
        moved, since = found, _next_submitted(step_meta, found, job)
        if len(known.jobs) <= index + 1:
            resized = size if size != known.meta.gang_cardinality else 0
            fetch = Fetch(index + 1, Fact.JOB, gang_size=resized)
            return Decision(index + 1, "", fetch=(fetch,), moved=moved, since=since, gang_size=size, left=left)
    last = len(known.steps) - 1
    return Decision(last, known.jobs[last].job_id, moved=moved, since=since if last else 0.0, gang_size=size, left=left)


def _holding(known: Known, where: Decision, wait: GangWait) -> Decision:
    """A gang member moving on while members of its step's gang are still in flight: the task goes on (RUNNING:
    its gang ran), saying what it waits for, and those members' jobs are cancelled, as their own polls cancel
    them; the next step is submitted once they have ended."""
    step, job = known.steps[where.step], known.jobs[where.step]
    state = job.state if job.state is not None else JobState.UNKNOWN
    facts = {
        "armada_state": state_name(state),
        "architecture": step.architecture,
        "node_group": step.node_group,
        **spill.spill_info(known.steps, known.meta),
        **moves.move_info(known.steps, step, where.moved, known.meta.spill_after_seconds),
        "gang_waits_for": list(wait.in_flight),
    }
    message = moves.gang_waiting_message(known.steps, step, wait)
    outcome = JobOutcome(TaskExecution.RUNNING, state, message, facts=facts)
    actions = tuple(Cancel(job_id, moves.GANG_MOVE_REASON) for job_id in wait.in_flight)
    return replace(where, outcome=outcome, actions=actions)


def _moved_on(
    step_meta: ArmadaJobMetadata, job: JobFacts, now: float, rules: Optional[Rules]
) -> Union[Move, Fact, str, None]:
    """How the task moved on from this step's job to the next step's (None: it did not), the fact to learn
    first, or why it cannot tell yet. One row per way to move on: a rejection that says no node of the group can
    hold the job; a run Armada failed for a platform mismatch; for a gang member, a job that ended (cancelled,
    failed otherwise, preempted) while a sibling of its step failed for a platform mismatch; a job the next
    step's job was submitted before (a move at once while queued: cancelled, or its cancel not yet through); a
    spill (cancelled while queued, never leased, once it could have been). Each reads only what Armada keeps of
    ended jobs and the order of the job set's events, so every poll (any replica) reads it the same."""
    categories = rules.platform_mismatch_categories if rules is not None else frozenset()
    state = job.state
    move: Optional[Move] = None
    if state == JobState.REJECTED:
        if job.reason is None:
            return Fact.REASON
        move = moves.rejection_moves(job.reason, step_meta.node_group)
    elif state == JobState.FAILED:
        category = job.run.failure_category if job.run is not None and job.run.covers(state) else ""
        if job.reason is None and category not in categories:
            return Fact.REASON
        move = moves.platform_mismatch(job.reason or "", category, categories)
    if move is None and step_meta.gang_id and state in moves.GANG_FOLLOWS:
        if job.gang is None:
            return Fact.GANG
        move = moves.sibling_mismatch(job.job_id, job.gang, categories)
    report_after = rules.queued_report_after_seconds if rules is not None else None
    if move is None and not step_meta.gang_id and moves.may_have_moved_at_once(step_meta, state, now, report_after):
        if job.next_job is None:
            return Fact.NEXT
        if job.next_job:
            return Move(moves.NO_NODE) if state != JobState.CANCELLED or job.details_read else Fact.DETAILS
        if state == JobState.CANCELLED and not job.end_in_events and rules is not None:
            if not job.details_read:
                return Fact.DETAILS
            if not over_limit(rules.ack_timeout_seconds, _ended(step_meta, job), now):
                return (
                    f"Armada says job {job.job_id} was cancelled; its job set's events do not tell yet whether the "
                    "next architecture's job was submitted before (a move at once)"
                )
    if move is None and state == JobState.CANCELLED:
        if not job.details_read:
            return Fact.DETAILS
        return Move(moves.SPILLED) if spill.was_spilled(step_meta, state, job.details, now) else None
    if move is not None and not job.details_read:
        return Fact.DETAILS  # when it ended: when the next step's job was submitted
    return move


def _ended(step_meta: ArmadaJobMetadata, job: JobFacts) -> float:
    """When the step's job ended, as its details say (else when it was submitted)."""
    return (job.details.finished_at if job.details is not None else 0.0) or step_meta.submitted_at


def _held(known: Known, step_meta: ArmadaJobMetadata, why: str) -> JobOutcome:
    """The answer while a cancelled step's move cannot be told: the phase last said (queued before any)."""
    phase = known.previous_phase if known.previous_phase is not None else TaskExecution.QUEUED
    facts = {"architecture": step_meta.architecture, **spill.spill_info(known.steps, known.meta)}
    return JobOutcome(phase, JobState.CANCELLED, f"{why}; asking again", facts=facts)


def _next_submitted(step_meta: ArmadaJobMetadata, move: Move, job: JobFacts) -> float:
    """When the next step's job was submitted, no earlier than: `spill_after` after this step's for a spill
    (as create's metadata counts), else when this step's job ended (at once), else this step's own submit."""
    if move.kind == moves.SPILLED:
        return step_meta.submitted_at + step_meta.spill_after_seconds
    if job.state not in TERMINAL_STATES:  # a move at once whose cancel is not through: no end to count from
        return step_meta.submitted_at
    return _ended(step_meta, job)


def _wanted(
    step: int, meta: ArmadaJobMetadata, job: JobFacts, now: float, rules: Rules, *, report_wanted: bool
) -> tuple[Fetch, ...]:
    """What the answer for the step's job (state known) still depends on, in rounds: the events first, for a
    job the status API doesn't know past the ack window; then what the state calls for; then Armada's reason."""
    state = job.state
    waited = now - meta.submitted_at if meta.submitted_at else 0.0
    if state == JobState.UNKNOWN and not job.events_read and meta.submitted_at and waited > rules.ack_timeout_seconds:
        # The job status API (fed by Armada's lookout ingester) can lag while the events (fed apart) know the job.
        return (Fetch(step, Fact.EVENTS),)
    wanted = []
    if job.report is None and state == JobState.QUEUED:
        if report_wanted or (meta.submitted_at and waited >= rules.queued_report_after_seconds):
            max_age = queued_report_max_age(meta, now, rules.queued_report_refresh_seconds)
            wanted.append(Fetch(step, Fact.REPORT, max_age))
    if not job.details_read and needs_run_details(meta, state):
        wanted.append(Fetch(step, Fact.DETAILS))
    if not job.error_read and state in ERROR_FILE_STATES:
        wanted.append(Fetch(step, Fact.ERROR_FILE))
    if wanted:
        return tuple(wanted)
    if job.reason is None and needs_reason(state, job.task_error, job.error_unreadable):
        return (Fetch(step, Fact.REASON),)
    return ()


def needs_run_details(meta: ArmadaJobMetadata, state: Optional[int]) -> bool:
    """Whether the run's node and times matter: a job that ended, or one running under a timeout or for `any`."""
    return state in TERMINAL_STATES or (state in RUN_STATES and (meta.timeout_seconds > 0 or bool(meta.any_of)))


def queued_report_max_age(meta: ArmadaJobMetadata, now: float, refresh_seconds: float) -> float:
    """How old a kept scheduling report may be: none at all once the queued timeout has passed, since
    that report is the failure's last word (one kept from the job's first second may predate every
    scheduling round that considered it)."""
    return 0.0 if over_limit(meta.queued_timeout_seconds, meta.submitted_at, now) else refresh_seconds


def _observed(job: JobFacts, known: Known) -> Observed:
    """The job's facts as `outcome_of` reads them."""
    state = job.state if job.state is not None else JobState.UNKNOWN
    covered = job.run is not None and job.run.covers(state)
    return Observed(
        state,
        known.now,
        job.details,
        job.task_error,
        job.error_unreadable,
        job.reason or "",
        job.report,
        known.previous_phase,
        dict(job.run.exit_codes) if covered and job.run is not None else {},
        job.from_events,
        job.events_unreadable,
    )
