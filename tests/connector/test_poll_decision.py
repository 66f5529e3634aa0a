"""PURE (no server, process or socket): the poll's one decision, as one table.

`decide(known, rules)` says what to fetch (in rounds), then what Flyte sees and which actions the
service carries out. Each row is a world (what Armada, the blob store and the scheduler would answer
for each job) and what the poll must do in it: the facts it fetches, in order, Flyte's phase, words of
its message, the actions, and the step it reached. The fetching here is a dict lookup, so the rows also
pin down that a poll asks for nothing it does not need.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Union

import pytest
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.armada_names import TERMINAL_STATES, JobState
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.metadata import ArmadaJobMetadata, encoded_steps
from armada_flyte.connector.model.run_details import RunDetails
from armada_flyte.connector.model.task_error import TaskError
from armada_flyte.connector.poll.decision import (
    TIMEOUT_REASON,
    Cancel,
    Decision,
    Fact,
    JobFacts,
    Known,
    Spill,
    current_job,
    decide,
)
from armada_flyte.connector.poll.job_set_streams import GangMember, RunFacts
from armada_flyte.connector.poll.moves import GANG_MOVE_REASON, QUEUED_MOVE_REASON
from armada_flyte.connector.poll.outcome import Rules
from armada_flyte.connector.poll.queued_report import QueuedReport
from armada_flyte.connector.poll.spill import SPILL_REASON

pytestmark = pytest.mark.pure

NOW = 1_800_000_000.0
RULES = Rules(
    ack_timeout_seconds=300,
    error_read_grace_seconds=60,
    node_groups=NodeGroups.preset("embedded"),
    queued_report_after_seconds=60,
    queued_report_refresh_seconds=30,
)
Q, RUN, OK, FAIL, ABORT = (
    TaskExecution.QUEUED,
    TaskExecution.RUNNING,
    TaskExecution.SUCCEEDED,
    TaskExecution.FAILED,
    TaskExecution.ABORTED,
)
RETRY = TaskExecution.RETRYABLE_FAILED
BUSY = QueuedReport("2 nodes of group arm64 are busy", {"n": 1}, NOW, waits_for_room=True)
NO_ARM_NODE = QueuedReport(
    "no node of group arm64 is left: 4 nodes of group amd64: node does not match pod NodeSelector (expected)",
    {"n": 3},
    NOW,
    no_node_of_group=True,
)
TAINTED = QueuedReport("the arm64 group's taint is not tolerated", {"n": 2}, NOW, waits_for_room=False)
USER_ERROR = TaskError("ValueError", "ValueError: bad input", "user", True)


def meta(waited: float = 10.0, **fields) -> ArmadaJobMetadata:
    """A task's metadata, its job submitted `waited` seconds before the poll."""
    base = dict(
        job_id="j0",
        job_set_id="s",
        queue="q",
        architecture="amd64",
        node_group="amd64",
        submitted_at=NOW - waited,
        task="t",
        outputs_path="s3://b/out",
    )
    return ArmadaJobMetadata(**{**base, **fields})


def preferring(waited: float, gang: bool = False, size: int = 2) -> ArmadaJobMetadata:
    """arm64 first, amd64 after 120 s queued; its later step's job is `j1` once submitted. A gang's: `size`
    members."""
    later = encoded_steps([("amd64", "amd64", b"item-amd64")])
    return meta(
        waited,
        architecture="arm64",
        node_group="arm64",
        spill_after_seconds=120,
        spill_jobs=later,
        gang_id="g-r1" if gang else "",
        gang_cardinality=size if gang else 0,
    )


@dataclass(frozen=True)
class World:
    """What each job's sources answer; a job not named is one Armada doesn't know (UNKNOWN)."""

    states: dict[str, int] = field(default_factory=dict)
    details: dict[str, RunDetails] = field(default_factory=dict)
    errors: dict[str, Union[TaskError, str]] = field(default_factory=dict)
    """a0's error file: a TaskError, or why it could not be read."""
    reasons: dict[str, str] = field(default_factory=dict)
    reports: dict[str, QueuedReport] = field(default_factory=dict)
    events: dict[str, Union[tuple[int, RunFacts], str]] = field(default_factory=dict)
    """What the job set's events say of a job: (state, run), or why they could not be read."""
    step_jobs: tuple[str, ...] = ("j0", "j1")
    runs: dict[str, RunFacts] = field(default_factory=dict)
    """What the job set's events said of a job's run, with its state (the status view's)."""
    gangs: dict[str, tuple[GangMember, ...]] = field(default_factory=dict)
    """Each gang's jobs other than the task's own, as the job set's events tell them (a gang not named: none)."""
    submitted_before_end: dict[str, str] = field(default_factory=dict)
    """The next step's job that the job set's events show submitted before a job ended (a job not named: none)."""
    events_behind: frozenset[str] = frozenset()
    """Jobs whose end the job set's events do not hold yet (others' ends they hold)."""


def fetched(world: World, known: Known, step: int, fact: Fact) -> Known:
    """One fact, as the service's gathering would fetch it, from the world."""
    if fact is Fact.JOB:
        return known.learnt(step, JobFacts(world.step_jobs[step]))
    job = known.jobs[step]
    job_id = job.job_id
    if fact is Fact.STATE:
        job = replace(job, state=world.states.get(job_id, JobState.UNKNOWN), run=world.runs.get(job_id))
    elif fact is Fact.EVENTS:
        said = world.events.get(job_id)
        if isinstance(said, str):
            job = replace(job, events_read=True, events_unreadable=said)
        elif said is not None:
            job = replace(job, events_read=True, state=said[0], run=said[1], from_events=True)
        else:
            job = replace(job, events_read=True)
    elif fact is Fact.DETAILS:
        job = replace(job, details_read=True, details=world.details.get(job_id))
    elif fact is Fact.ERROR_FILE:
        error = world.errors.get(job_id)
        unreadable = error if isinstance(error, str) else ""
        job = replace(job, error_read=True, task_error=None if unreadable else error, error_unreadable=unreadable)
    elif fact is Fact.REASON:
        job = replace(job, reason=world.reasons.get(job_id, ""))
    elif fact is Fact.REPORT:
        job = replace(job, report=world.reports.get(job_id, QueuedReport("the latest round did not consider it")))
    elif fact is Fact.GANG:
        gang_id = known.meta.for_step(known.steps[step], job_id).gang_id
        job = replace(job, gang=world.gangs.get(gang_id, ()))
    elif fact is Fact.NEXT:
        in_events = job.state in TERMINAL_STATES and job_id not in world.events_behind
        job = replace(job, next_job=world.submitted_before_end.get(job_id, ""), end_in_events=in_events)
    return known.learnt(step, job)


def polled(
    task: ArmadaJobMetadata, world: World, previous: Optional[int] = None, rules: Rules = RULES
) -> tuple[Decision, list[str]]:
    """The decision a poll ends with, and the facts it fetched on the way (`fact@step`)."""
    known, asked = Known.of(task, NOW, previous), []
    decision = decide(known, rules)
    while decision.fetch:
        for fetch in decision.fetch:
            asked.append(f"{fetch.fact.value}@{fetch.step}")
            known = fetched(world, known, fetch.step, fetch.fact)
        decision = decide(known, rules)
    return decision, asked


@dataclass(frozen=True)
class Case:
    name: str
    task: ArmadaJobMetadata
    world: World
    asks: tuple[str, ...]
    phase: int
    says: tuple[str, ...] = ()
    actions: tuple[Union[Cancel, Spill], ...] = ()
    step: int = 0
    previous: Optional[int] = None
    rules: Rules = RULES
    moved_by: str = ""
    """For a preference: how it moved on to its current step (custom_info's `moved_by`; empty: it did not)."""

    def __str__(self) -> str:
        return self.name


RAN = RunDetails("amd64-0", "c", "", NOW - 5, NOW - 50)
NEVER_LEASED = RunDetails("", "", "CANCELLED", NOW - 5)
LEASED_ARM = RunDetails("arm64-0", "c", "CANCELLED", NOW - 5, NOW - 50)
REJECTED_AT = RunDetails("", "", "REJECTED", NOW - 5)
FAILED_ON_ARM = RunDetails("arm64-0", "c", "FAILED", NOW - 5, NOW - 6)
TOO_BIG_FOR_ARM = (
    "pool default:\nNode: none\nNumber of nodes in cluster: 4\nExcluded nodes:\n"
    "\t2:\tpod requires 8 cpu, but only 4 is available (node group arm64)\n"
    "\t2:\tnode does not match pod NodeSelector: required label kubernetes.io/arch = arm64, but node has amd64"
    " (node group amd64)\n---"
)
QUEUE_LIMIT = (
    "pool default:\njob/gang requests resources cpu: 64 which exceeds the total limit of cpu: 16 for its "
    "queue/priority class\n\n---"
)
EXEC_FORMAT = "Container main failed with exit code 255 because Error: exec /usr/bin/python: exec format error"
NO_ARM_VARIANT = (
    "image reg/app:1 has no linux/arm64 variant, which node set arm64 needs: Docker holds it for linux/amd64 only"
)
FOREIGN_WHEEL = TaskError("ImportError", "ImportError: /venv/_native.so: wrong ELF class: ELFCLASS64", "user", True)
SIBLING_FOREIGN = (
    GangMember("s0", JobState.FAILED, RunFacts(node="arm64-1", ended=True, finished_at=NOW - 8, reason=EXEC_FORMAT)),
)
"""The gang's jobs: a sibling whose program could not run on arm64."""
SIBLING_EXIT_3 = (
    GangMember("s0", JobState.FAILED, RunFacts(ended=True, reason="Container main failed with exit code 3")),
)
SIBLING_DONE = (GangMember("s1", JobState.SUCCEEDED, RunFacts(node="arm64-0", ended=True, finished_at=NOW - 20)),)
"""A sibling that succeeded on arm64 before the gang moved."""
SIBLING_RUNNING = (GangMember("s1", JobState.RUNNING, RunFacts(node="arm64-0", started_at=NOW - 40)),)
"""A sibling whose run has not ended yet: it may still succeed, or be cancelled for the move."""
CATEGORIES = replace(RULES, platform_mismatch_categories=frozenset({"wrong-platform"}))
FAILED_IN_CATEGORY = RunFacts(node="arm64-0", ended=True, finished_at=NOW - 5, failure_category="wrong-platform")

CASES = [
    # ---- one job: only what the answer depends on is fetched ----
    Case("running", meta(), World({"j0": JobState.RUNNING}), ("state@0",), RUN, ("Armada job j0 is RUNNING",)),
    Case(
        "running under a timeout reads the run's start",
        meta(timeout_seconds=600),
        World({"j0": JobState.RUNNING}, {"j0": RAN}),
        ("state@0", "details@0"),
        RUN,
    ),
    Case(
        "running over its timeout is cancelled",
        meta(timeout_seconds=30),
        World({"j0": JobState.RUNNING}, {"j0": RAN}),
        ("state@0", "details@0"),
        RETRY,
        ("TaskTimeout", "exceeded the task's timeout of 30s running"),
        (Cancel("j0", TIMEOUT_REASON),),
    ),
    Case("queued a moment", meta(), World({"j0": JobState.QUEUED}), ("state@0",), Q, ("is QUEUED",)),
    Case(
        "queued a while asks the scheduler why",
        meta(waited=90),
        World({"j0": JobState.QUEUED}, reports={"j0": TAINTED}),
        ("state@0", "report@0"),
        Q,
        ("is QUEUED; why: the arm64 group's taint",),
    ),
    Case(
        "queued past its queued timeout is cancelled, saying why it waited",
        meta(waited=90, queued_timeout_seconds=60),
        World({"j0": JobState.QUEUED}, reports={"j0": TAINTED}),
        ("state@0", "report@0"),
        RETRY,
        ("exceeded the task's timeout of 60s waiting to start", "why: the arm64 group's taint"),
        (Cancel("j0", TIMEOUT_REASON),),
    ),
    Case("not visible yet", meta(), World(), ("state@0",), Q, ("not visible yet",)),
    Case(
        "unknown past the ack window, its events know it",
        meta(waited=400),
        World(events={"j0": (JobState.RUNNING, RunFacts(node="amd64-0", started_at=NOW - 60))}),
        ("state@0", "events@0"),
        RUN,
        ("is RUNNING by its job set's events",),
    ),
    Case(
        "unknown past the ack window, events unreadable: still waiting",
        meta(waited=400),
        World(events={"j0": "Armada at a:1 is unavailable"}),
        ("state@0", "events@0"),
        Q,
        ("could not be read to tell whether it was lost",),
    ),
    Case(
        "unknown past the ack window, the events neither: lost",
        meta(waited=400),
        World(),
        ("state@0", "events@0"),
        FAIL,
        ("has not acknowledged job j0",),
    ),
    Case(
        "succeeded: the run and a0's error file",
        meta(),
        World({"j0": JobState.SUCCEEDED}, {"j0": RAN}),
        ("state@0", "details@0", "error file@0"),
        OK,
        ("on node amd64-0 succeeded",),
    ),
    Case(
        "failed, a0 says why: no reason asked",
        meta(),
        World({"j0": JobState.FAILED}, {"j0": RAN}, {"j0": USER_ERROR}),
        ("state@0", "details@0", "error file@0"),
        RETRY,
        ("ValueError: bad input (USER error",),
    ),
    Case(
        "failed, a0 silent: Armada's reason",
        meta(),
        World({"j0": JobState.FAILED}, {"j0": RAN}, reasons={"j0": "Container main failed with exit code 1"}),
        ("state@0", "details@0", "error file@0", "reason@0"),
        FAIL,
        ("failed: Container main failed with exit code 1",),
    ),
    Case(
        "ended, the blob store unreadable: waits for the grace period",
        meta(),
        World({"j0": JobState.SUCCEEDED}, {"j0": RAN}, {"j0": "timed out reading error.pb"}),
        ("state@0", "details@0", "error file@0"),
        RUN,
        ("ended; timed out reading error.pb; retrying",),
    ),
    Case(
        "rejected: no error file, Armada's reason",
        meta(waited=60),
        World({"j0": JobState.REJECTED}, reasons={"j0": "job is too big"}),
        ("state@0", "details@0", "reason@0"),
        FAIL,
        ("was rejected by Armada: job is too big",),
    ),
    Case(
        "a phase never goes back",
        meta(),
        World({"j0": JobState.QUEUED}),
        ("state@0",),
        RUN,
        previous=RUN,
    ),
    Case("refused at create: nothing asked", meta(job_id="", refusal_code="InvalidConfig"), World(), (), FAIL),
    # ---- an architecture preference: the step reached, then its job ----
    Case(
        "first step queued within spill_after",
        preferring(waited=60),
        World({"j0": JobState.QUEUED}, reports={"j0": BUSY}),
        ("state@0", "next@0", "report@0"),
        Q,
        ("is QUEUED",),
    ),
    Case(
        "first step waited for room past spill_after: spilled",
        preferring(waited=130),
        World({"j0": JobState.QUEUED}, reports={"j0": BUSY}),
        ("state@0", "next@0", "report@0"),
        Q,
        ("spilling from arm64 to amd64: queued over 120 s",),
        (Spill("j0", SPILL_REASON),),
    ),
    Case(
        "first step waits for something no other architecture fixes: kept",
        preferring(waited=130),
        World({"j0": JobState.QUEUED}, reports={"j0": TAINTED}),
        ("state@0", "next@0", "report@0"),
        Q,
        ("is QUEUED; why: the arm64 group's taint",),
    ),
    Case(
        "first step spilled: the next step's job is submitted and polled",
        preferring(waited=130),
        World({"j0": JobState.CANCELLED, "j1": JobState.QUEUED}, {"j0": NEVER_LEASED}),
        ("state@0", "next@0", "details@0", "job@1", "state@1"),
        Q,
        ("spilled from arm64 to amd64 after 120 s queued: no arm64 node had room", "Armada job j1 is QUEUED"),
        step=1,
    ),
    Case(
        "the last step never spills",
        preferring(waited=400),
        World({"j0": JobState.CANCELLED, "j1": JobState.QUEUED}, {"j0": NEVER_LEASED}, reports={"j1": BUSY}),
        ("state@0", "next@0", "details@0", "job@1", "state@1", "report@1"),
        Q,
        ("spilled from arm64",),
        step=1,
    ),
    Case(
        "first step cancelled after a lease: not a spill, the task was cancelled",
        preferring(waited=130),
        World({"j0": JobState.CANCELLED}, {"j0": LEASED_ARM}),
        ("state@0", "next@0", "details@0"),
        ABORT,
        ("was cancelled",),
    ),
    Case(
        "first step cancelled before spill_after: someone else's cancel",
        preferring(waited=60),
        World({"j0": JobState.CANCELLED}, {"j0": NEVER_LEASED}),
        ("state@0", "next@0", "details@0"),
        ABORT,
    ),
    # ---- moving on at once, when waiting cannot help ----
    Case(
        "first step queued a moment: nothing asked of a move while queued",
        preferring(waited=10),
        World({"j0": JobState.QUEUED}),
        ("state@0",),
        Q,
        ("is QUEUED",),
    ),
    Case(
        "first step queued, its group has no node left: the next step's job is submitted, then its own cancelled",
        preferring(waited=60),
        World({"j0": JobState.QUEUED}, reports={"j0": NO_ARM_NODE}),
        ("state@0", "next@0", "report@0", "job@1"),
        Q,
        (
            "moving from arm64 to amd64 at once: no node of group arm64 is left",
            "its amd64 job is submitted, then its arm64 job cancelled",
        ),
        (Cancel("j0", QUEUED_MOVE_REASON),),
    ),
    Case(
        "no node left, but spill_after is seconds away: no move at once, whose cancel would read as a spill",
        preferring(waited=116),
        World({"j0": JobState.QUEUED}, reports={"j0": NO_ARM_NODE}),
        ("state@0", "next@0", "report@0"),
        Q,
        ("is QUEUED; why: no node of group arm64 is left",),
    ),
    Case(
        "no node left past spill_after: spilled",
        preferring(waited=130),
        World({"j0": JobState.QUEUED}, reports={"j0": NO_ARM_NODE}),
        ("state@0", "next@0", "report@0"),
        Q,
        ("spilling from arm64 to amd64",),
        (Spill("j0", SPILL_REASON),),
    ),
    Case(
        "a gang member whose group has no node left keeps the spill's wait",
        preferring(waited=60, gang=True),
        World({"j0": JobState.QUEUED}, reports={"j0": NO_ARM_NODE}),
        ("state@0", "gang@0", "report@0"),
        Q,
        ("why: no node of group arm64 is left",),
    ),
    Case(
        "first step cancelled after the next step's job was submitted: moved on at once",
        preferring(waited=62),
        World(
            {"j0": JobState.CANCELLED, "j1": JobState.QUEUED}, {"j0": NEVER_LEASED}, submitted_before_end={"j0": "j1"}
        ),
        ("state@0", "next@0", "details@0", "job@1", "state@1"),
        Q,
        ("moved from arm64 to amd64 at once: Armada's scheduler had no arm64 node left", "Armada job j1 is QUEUED"),
        step=1,
        moved_by="no node left",
    ),
    Case(
        "moved on at once stays so past spill_after (not read as a spill)",
        preferring(waited=400),
        World(
            {"j0": JobState.CANCELLED, "j1": JobState.RUNNING}, {"j0": NEVER_LEASED}, submitted_before_end={"j0": "j1"}
        ),
        ("state@0", "next@0", "details@0", "job@1", "state@1"),
        RUN,
        ("moved from arm64 to amd64 at once",),
        step=1,
        moved_by="no node left",
    ),
    *(
        Case(
            f"first step {how} after the next step's job was submitted: the move goes on, its cancel sent again",
            preferring(waited=62),
            World({"j0": state, "j1": JobState.QUEUED}, submitted_before_end={"j0": "j1"}),
            ("state@0", "next@0", "job@1", "state@1", "report@1"),
            Q,
            ("moved from arm64 to amd64 at once", "Armada job j1 is QUEUED"),
            (Cancel("j0", QUEUED_MOVE_REASON),),
            step=1,
            moved_by="no node left",
        )
        # the poll that moved it died before its cancel; since leased, it is cancelled running: one run
        for how, state in (("still queued", JobState.QUEUED), ("leased since", JobState.RUNNING))
    ),
    Case(
        "first step running, no next step's job submitted: it runs",
        preferring(waited=62),
        World({"j0": JobState.RUNNING}),
        ("state@0", "next@0"),
        RUN,
        ("Armada job j0 is RUNNING",),
    ),
    Case(
        "first step cancelled, its job set's events behind: held until they tell",
        preferring(waited=62),
        World({"j0": JobState.CANCELLED}, {"j0": NEVER_LEASED}, events_behind=frozenset({"j0"})),
        ("state@0", "next@0", "details@0"),
        Q,
        ("events do not tell yet whether the next architecture's job was submitted before",),
    ),
    Case(
        "first step cancelled, its job set's events behind past the ack window: read as the spill it may be",
        preferring(waited=900),
        World(
            {"j0": JobState.CANCELLED, "j1": JobState.QUEUED},
            {"j0": RunDetails("", "", "CANCELLED", NOW - 400)},
            reports={"j1": BUSY},
            events_behind=frozenset({"j0"}),
        ),
        ("state@0", "next@0", "details@0", "job@1", "state@1", "report@1"),
        Q,
        ("spilled from arm64 to amd64",),
        step=1,
        moved_by="spilled",
    ),
    Case(
        "first step cancelled after a lease, its job set's events behind past the ack window: cancelled",
        preferring(waited=900),
        World(
            {"j0": JobState.CANCELLED},
            {"j0": RunDetails("arm64-0", "c", "CANCELLED", NOW - 400, NOW - 500)},
            events_behind=frozenset({"j0"}),
        ),
        ("state@0", "next@0", "details@0"),
        ABORT,
        ("was cancelled",),
    ),
    Case(
        "first step rejected, no arm64 node can hold it: the next step at once",
        preferring(waited=6),
        World({"j0": JobState.REJECTED, "j1": JobState.QUEUED}, {"j0": REJECTED_AT}, reasons={"j0": TOO_BIG_FOR_ARM}),
        ("state@0", "reason@0", "details@0", "job@1", "state@1"),
        Q,
        (
            "moved from arm64 to amd64 at once: Armada rejected the arm64 job: no arm64 node can ever hold it "
            "(2 nodes: pod requires 8 cpu, but only 4 is available)",
            "Armada job j1 is QUEUED",
        ),
        step=1,
        moved_by="rejected",
    ),
    Case(
        "first step rejected for its queue's limit: no other architecture lifts it",
        preferring(waited=6),
        World({"j0": JobState.REJECTED}, reasons={"j0": QUEUE_LIMIT}),
        ("state@0", "reason@0", "details@0"),
        FAIL,
        ("was rejected by Armada: pool default:\njob/gang requests resources",),
    ),
    Case(
        "first step rejected, Armada's reason not written yet: waits for it",
        preferring(waited=3),
        World({"j0": JobState.REJECTED}),
        ("state@0", "reason@0", "details@0"),
        Q,
        ("is REJECTED; waiting for Armada's reason",),
    ),
    Case(
        "first step failed with an exec format error, a0 never ran: the next step at once",
        preferring(waited=30),
        World({"j0": JobState.FAILED, "j1": JobState.PENDING}, {"j0": FAILED_ON_ARM}, reasons={"j0": EXEC_FORMAT}),
        ("state@0", "reason@0", "details@0", "job@1", "state@1"),
        TaskExecution.INITIALIZING,
        ("moved from arm64 to amd64 at once: the image cannot run on arm64 (exec /usr/bin/python: exec format error)",),
        step=1,
        moved_by="platform mismatch",
    ),
    Case(
        "first step's image has no arm64 variant: the next step at once",
        preferring(waited=30),
        World({"j0": JobState.FAILED, "j1": JobState.RUNNING}, {"j0": FAILED_ON_ARM}, reasons={"j0": NO_ARM_VARIANT}),
        ("state@0", "reason@0", "details@0", "job@1", "state@1"),
        RUN,
        ("the image cannot run on arm64 (image reg/app:1 has no linux/arm64 variant",),
        step=1,
        moved_by="platform mismatch",
    ),
    Case(
        "first step failed in a category the admin lists: moves without asking Armada's reason",
        preferring(waited=30),
        World({"j0": JobState.FAILED, "j1": JobState.QUEUED}, {"j0": FAILED_ON_ARM}, runs={"j0": FAILED_IN_CATEGORY}),
        ("state@0", "details@0", "job@1", "state@1"),
        Q,
        ("the image cannot run on arm64 (Armada's failure category wrong-platform)",),
        step=1,
        rules=CATEGORIES,
        moved_by="platform mismatch",
    ),
    Case(
        "first step's foreign-CPU crash a0 recorded (it ends its container normally): no move, said as before",
        preferring(waited=30),
        World({"j0": JobState.SUCCEEDED}, {"j0": FAILED_ON_ARM}, {"j0": FOREIGN_WHEEL}),
        ("state@0", "details@0", "error file@0"),
        RETRY,
        ("has no linux/arm64 variant: ImportError",),
    ),
    Case(
        "first step failed for another reason: the task fails, no move",
        preferring(waited=30),
        World({"j0": JobState.FAILED}, {"j0": FAILED_ON_ARM}, reasons={"j0": "Container main failed with exit code 3"}),
        ("state@0", "reason@0", "details@0", "error file@0"),
        FAIL,
        ("failed: Container main failed with exit code 3",),
    ),
    Case(
        "the last step never moves: rejected there too, the task fails naming both",
        preferring(waited=6),
        World(
            {"j0": JobState.REJECTED, "j1": JobState.REJECTED},
            {"j0": REJECTED_AT, "j1": REJECTED_AT},
            reasons={"j0": TOO_BIG_FOR_ARM, "j1": TOO_BIG_FOR_ARM.replace("arm64", "amd64")},
        ),
        ("state@0", "reason@0", "details@0", "job@1", "state@1", "details@1", "reason@1"),
        FAIL,
        ("moved from arm64 to amd64 at once", "Armada job j1 was rejected by Armada"),
        step=1,
        moved_by="rejected",
    ),
    Case(
        "a pinned task keeps its failure",
        meta(),
        World({"j0": JobState.FAILED}, {"j0": RAN}, reasons={"j0": EXEC_FORMAT}),
        ("state@0", "details@0", "error file@0", "reason@0"),
        FAIL,
        ("has no linux/amd64 variant",),
    ),
    Case(
        "the moved step's queued timeout counts from the move, not from create",
        replace(preferring(waited=90), queued_timeout_seconds=60),
        World(
            {"j0": JobState.REJECTED, "j1": JobState.QUEUED},
            {"j0": REJECTED_AT},
            reasons={"j0": TOO_BIG_FOR_ARM},
            reports={"j1": BUSY},
        ),
        ("state@0", "reason@0", "details@0", "job@1", "state@1"),
        Q,
        ("moved from arm64", "Armada job j1 is QUEUED"),
        step=1,
        moved_by="rejected",
    ),
    Case(
        "a gang member rejected moves on at once, as each member Armada rejects does",
        preferring(waited=5, gang=True),
        World({"j0": JobState.REJECTED, "j1": JobState.QUEUED}, {"j0": REJECTED_AT}, reasons={"j0": TOO_BIG_FOR_ARM}),
        ("state@0", "reason@0", "details@0", "job@1", "state@1"),
        Q,
        ("moved from arm64 to amd64 at once",),
        step=1,
        moved_by="rejected",
    ),
    Case(
        "a gang member moves on whenever its gang was spilled",
        preferring(waited=5, gang=True),
        World({"j0": JobState.CANCELLED, "j1": JobState.RUNNING}, {"j0": NEVER_LEASED}),
        ("state@0", "gang@0", "details@0", "job@1", "state@1"),
        RUN,
        ("spilled from arm64 to amd64",),
        step=1,
    ),
    # ---- a gang moves as a whole when one member's run fails for a platform mismatch ----
    Case(
        "a gang member running while a sibling failed with an exec format error: its job is cancelled",
        preferring(waited=30, gang=True),
        World({"j0": JobState.RUNNING}, gangs={"g-r1": SIBLING_FOREIGN}),
        ("state@0", "gang@0"),
        RUN,
        (
            "moving from arm64 to amd64 with its gang: the image cannot run on arm64 (gang member s0: exec "
            "/usr/bin/python: exec format error); its job is cancelled, then submitted for amd64",
        ),
        (Cancel("j0", GANG_MOVE_REASON),),
    ),
    Case(
        "a gang member queued while a sibling failed in a category the admin lists: its job is cancelled",
        preferring(waited=30, gang=True),
        World({"j0": JobState.QUEUED}, gangs={"g-r1": (GangMember("s0", JobState.FAILED, FAILED_IN_CATEGORY),)}),
        ("state@0", "gang@0"),
        Q,
        ("moving from arm64 to amd64 with its gang: the image cannot run on arm64 (gang member s0: Armada's",),
        (Cancel("j0", GANG_MOVE_REASON),),
        rules=CATEGORIES,
    ),
    Case(
        "a gang member running while a sibling failed for its own code: nothing moves",
        preferring(waited=30, gang=True),
        World({"j0": JobState.RUNNING}, gangs={"g-r1": SIBLING_EXIT_3}),
        ("state@0", "gang@0"),
        RUN,
        ("Armada job j0 is RUNNING",),
    ),
    Case(
        "a gang member cancelled for its gang's move: the next step at once",
        preferring(waited=30, gang=True),
        World({"j0": JobState.CANCELLED, "j1": JobState.QUEUED}, {"j0": LEASED_ARM}, gangs={"g-r1": SIBLING_FOREIGN}),
        ("state@0", "gang@0", "details@0", "job@1", "state@1"),
        Q,
        ("moved from arm64 to amd64 at once: the image cannot run on arm64 (gang member s0: exec",),
        step=1,
        moved_by="platform mismatch",
    ),
    Case(
        "a gang member that failed otherwise while a sibling failed for a platform mismatch moves with it",
        preferring(waited=30, gang=True),
        World(
            {"j0": JobState.FAILED, "j1": JobState.RUNNING},
            {"j0": FAILED_ON_ARM},
            reasons={"j0": "Container main failed with exit code 3"},
            gangs={
                "g-r1": SIBLING_FOREIGN + (GangMember("j0", JobState.FAILED, RunFacts(ended=True, reason="exit 3")),)
            },
        ),
        ("state@0", "reason@0", "gang@0", "details@0", "job@1", "state@1"),
        RUN,
        ("moved from arm64 to amd64 at once: the image cannot run on arm64 (gang member s0",),
        step=1,
        moved_by="platform mismatch",
    ),
    Case(
        "a gang member cancelled after a lease, no sibling failed for a platform mismatch: aborted as before",
        preferring(waited=30, gang=True),
        World({"j0": JobState.CANCELLED}, {"j0": LEASED_ARM}, gangs={"g-r1": SIBLING_EXIT_3}),
        ("state@0", "gang@0", "details@0"),
        ABORT,
        ("was cancelled",),
    ),
    Case(
        "a gang member on the next step: its sibling's mismatch there has nowhere to move (the step's own gang)",
        preferring(waited=30, gang=True),
        World(
            {"j0": JobState.CANCELLED, "j1": JobState.RUNNING},
            {"j0": LEASED_ARM},
            gangs={
                "g-r1": SIBLING_FOREIGN,
                "g-r1-amd64": (GangMember("s1", JobState.FAILED, RunFacts(ended=True, reason=EXEC_FORMAT)),),
            },
        ),
        ("state@0", "gang@0", "details@0", "job@1", "state@1"),
        RUN,
        ("moved from arm64 to amd64 at once", "Armada job j1 is RUNNING"),
        step=1,
        moved_by="platform mismatch",
    ),
    # ---- a member that succeeded stays done: the next gang is the members that did not ----
    Case(
        "a gang member cancelled for the move while a sibling still runs: it waits for that end, cancelling it",
        preferring(waited=30, gang=True, size=3),
        World({"j0": JobState.CANCELLED}, {"j0": LEASED_ARM}, gangs={"g-r1": SIBLING_FOREIGN + SIBLING_RUNNING}),
        ("state@0", "gang@0", "details@0"),
        RUN,
        (
            "moving from arm64 to amd64 with its gang: the image cannot run on arm64 (gang member s0: exec",
            "waiting for the gang's jobs still in flight to end (s1: cancelled for the move), so the amd64 gang "
            "counts only the members that did not succeed on arm64",
        ),
        (Cancel("s1", GANG_MOVE_REASON),),
    ),
    Case(
        "a gang member cancelled for the move while a sibling had succeeded: the next gang leaves that one out",
        preferring(waited=30, gang=True, size=3),
        World(
            {"j0": JobState.CANCELLED, "j1": JobState.QUEUED},
            {"j0": LEASED_ARM},
            gangs={"g-r1": SIBLING_FOREIGN + SIBLING_DONE},
        ),
        ("state@0", "gang@0", "details@0", "job@1", "state@1"),
        Q,
        (
            "moved from arm64 to amd64 at once: the image cannot run on arm64 (gang member s0: exec",
            "the gang moved on as 2 members: s1 has already succeeded and stays done",
            "Armada starts none of its 2 members",
        ),
        step=1,
        moved_by="platform mismatch",
    ),
    Case(
        "a gang member whose own run hit an exec format error after a sibling succeeded: a gang of the rest",
        preferring(waited=30, gang=True, size=2),
        World(
            {"j0": JobState.FAILED, "j1": JobState.QUEUED},
            {"j0": FAILED_ON_ARM},
            reasons={"j0": EXEC_FORMAT},
            gangs={"g-r1": SIBLING_DONE},
        ),
        ("state@0", "reason@0", "details@0", "gang@0", "job@1", "state@1"),
        Q,
        ("moved from arm64 to amd64 at once: the image cannot run on arm64 (exec", "moved on as 1 member: s1 has"),
        step=1,
        moved_by="platform mismatch",
    ),
    Case(
        "a pinned gang member keeps running while a sibling fails with an exec format error",
        replace(meta(waited=30), gang_id="g-r1", gang_cardinality=2),
        World({"j0": JobState.RUNNING}, gangs={"g-r1": SIBLING_FOREIGN}),
        ("state@0",),
        RUN,
        ("Armada job j0 is RUNNING",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_what_a_poll_fetches_answers_and_does(case: Case):
    decision, asked = polled(case.task, case.world, case.previous, case.rules)
    assert tuple(asked) == case.asks
    assert decision.outcome is not None
    outcome = decision.outcome
    assert TaskExecution.Phase.Name(outcome.phase) == TaskExecution.Phase.Name(case.phase), outcome.message
    for part in case.says:
        assert part in outcome.message, outcome.message
    assert decision.actions == case.actions
    assert decision.step == case.step
    if case.task.spill_jobs:
        assert outcome.info["architecture_preference"] == ["arm64", "amd64"]
        assert outcome.info.get("moved_by", "") == case.moved_by or (case.step > 0 and not case.moved_by)
        assert ("moved_from" in outcome.info) == (case.step > 0)
        assert ("spilled_from" in outcome.info) == (outcome.info.get("moved_by") == "spilled")


def test_the_job_that_is_current_is_what_the_poll_answers_for():
    """get_logs asks `current_job` alone: the same walk, without the current job's own facts."""
    world = World({"j0": JobState.CANCELLED, "j1": JobState.RUNNING}, {"j0": NEVER_LEASED})
    known = Known.of(preferring(waited=130), NOW)
    while (where := current_job(known)).fetch:
        for fetch in where.fetch:
            known = fetched(world, known, fetch.step, fetch.fact)
    decision, _ = polled(preferring(waited=130), world)
    assert (where.step, where.job_id) == (decision.step, decision.job_id) == (1, "j1")
    assert current_job(Known.of(meta(), NOW)) == Decision(0, "j0")


def test_the_next_step_of_a_gang_whose_member_succeeded_is_submitted_with_the_members_left():
    """The step's item is submitted with the gang's cardinality less the members that succeeded (`gang_size`),
    and custom_info says the size and who stayed done; without such a member, the item goes as create built it."""
    world = World({"j0": JobState.CANCELLED, "j1": JobState.QUEUED}, {"j0": LEASED_ARM})
    for siblings, submitted_with in [(SIBLING_FOREIGN + SIBLING_DONE, 2), (SIBLING_FOREIGN, 0)]:
        known = Known.of(preferring(waited=30, gang=True, size=3), NOW)
        gang_world = replace(world, gangs={"g-r1": siblings})
        while (where := current_job(known, RULES)).fetch and where.fetch[0].fact is not Fact.JOB:
            for fetch in where.fetch:
                known = fetched(gang_world, known, fetch.step, fetch.fact)
        assert [(f.fact, f.gang_size) for f in where.fetch] == [(Fact.JOB, submitted_with)]
    decision, _ = polled(
        preferring(waited=30, gang=True, size=3), replace(world, gangs={"g-r1": SIBLING_FOREIGN + SIBLING_DONE})
    )
    assert decision.gang_size == 2
    assert decision.outcome is not None
    assert decision.outcome.info["gang_cardinality"] == 2 and decision.outcome.info["gang_members_done"] == ["s1"]


def test_a_gang_size_found_on_one_move_holds_on_the_steps_after():
    """arm64, then amd64, then riscv64: a member that succeeded on arm64 is left out of the amd64 gang, and so
    of the riscv64 one the amd64 gang is rejected into (a rejected gang never ran: no member of it succeeded)."""
    later = encoded_steps([("amd64", "amd64", b"item-amd64"), ("riscv64", "riscv64", b"item-riscv64")])
    task = replace(preferring(waited=30, gang=True, size=3), spill_jobs=later)
    world = World(
        {"j0": JobState.CANCELLED, "j1": JobState.REJECTED, "j2": JobState.QUEUED},
        {"j0": LEASED_ARM, "j1": REJECTED_AT},
        reasons={"j1": TOO_BIG_FOR_ARM},
        step_jobs=("j0", "j1", "j2"),
        gangs={"g-r1": SIBLING_FOREIGN + SIBLING_DONE},
    )
    known, fetches = Known.of(task, NOW), []
    while (where := current_job(known, RULES)).fetch:
        fetches += where.fetch
        for fetch in where.fetch:
            known = fetched(world, known, fetch.step, fetch.fact)
    assert [f.gang_size for f in fetches if f.fact is Fact.JOB] == [2, 2]
    assert (where.step, where.gang_size) == (2, 2)
