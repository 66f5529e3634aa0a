"""PURE (no server, process or socket): what the connector tells Flyte about one job, as one table.

`outcome_of`, the last row of the poll's decision (test_poll_decision.py), maps (metadata, Armada's
state, the run's details, a0's error, Armada's reason) to Flyte's phase, message and error. Each row
gives its inputs by kind (state x error kind x timeout x gang x `any` architecture) and what Flyte
must see; a second test checks rules that hold for every combination of those kinds.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Optional

import pytest
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.armada_names import TERMINAL_STATES, JobState
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.model.run_details import RunDetails
from armada_flyte.connector.model.task_error import TaskError
from armada_flyte.connector.poll.decision import needs_run_details, queued_report_max_age
from armada_flyte.connector.poll.outcome import ERROR_FILE_STATES, Observed, Rules, needs_reason, outcome_of
from armada_flyte.connector.poll.queued_report import QueuedReport

NOW = 1_800_000_000.0
WAITED = 100.0
"""Every job was submitted (and its run started) this long before the poll."""
GROUPS = NodeGroups.from_mapping({"architectures": {"amd64": {}, "arm64": {}}}, origin="groups.yaml")
RULES = Rules(ack_timeout_seconds=300, error_read_grace_seconds=60, node_groups=GROUPS)

ERRORS = {
    "none": None,
    "user": TaskError("ValueError", "ValueError: bad input", "user", True),
    "user-final": TaskError("NonRecoverableError", "NonRecoverableError: give up", "user", False),
    "system": TaskError("OOMKilled", "OOMKilled: out of memory", "system", True),
    "wrong-elf": TaskError("ImportError", "ImportError: wrong ELF class: ELFCLASS64", "user", True),
}
"""a0's error.pb by kind; "unreadable" and "unreadable-late" are a blob store that didn't answer."""
ERROR_KINDS = (*ERRORS, "unreadable", "unreadable-late")

REASONS = {
    JobState.FAILED: "Container main failed with exit code 1 because Error: boom",
    JobState.REJECTED: "pool default:\nExcluded nodes:\n\t2:\tinsufficient resources available\n---",
    JobState.PREEMPTED: "Preempted - preemption requested via API",
}
"""Armada's reason (GetJobErrors) for a failure a0 explained nothing about."""
OTHER_REASONS = {
    "deadline": "Pod was active on the node longer than the specified deadline",
    "exec-format": "Container main failed with exit code 255: exec /usr/bin/python: exec format error",
    "oom": (
        "container main was OOMKilled: the container's processes went over its memory limit (268435456 bytes, "
        "counting its files in /dev/shm and Memory emptyDirs); the most it was seen using: 734003200 bytes"
    ),
    "oom-no-limit": "Container main failed with exit code 137 because OOMKilled",
    "queue-limit": (
        "pool default:\njob/gang requests resources {cpu: 64} which exceeds the total limit of {cpu: 16} "
        "for its queue/priority class\n\n---"
    ),
}
TIMEOUTS = {"none": 0.0, "within": 600.0, "over": 60.0}
"""The task's timeout (also its queued timeout) against WAITED."""
REPORT = QueuedReport("2 nodes of group amd64 are busy: not enough of the task's resources is free", {"n": 1})


def _meta(timeout: str = "none", gang: bool = False, any_arch: bool = False) -> ArmadaJobMetadata:
    return ArmadaJobMetadata(
        job_id="j1",
        job_set_id="s1",
        queue="q",
        architecture="" if any_arch else "amd64",
        node_group="" if any_arch else "amd64",
        image="example.com/app:1",
        any_of="amd64,arm64" if any_arch else "",
        submitted_at=NOW - WAITED,
        task="t",
        timeout_seconds=TIMEOUTS[timeout],
        queued_timeout_seconds=TIMEOUTS[timeout],
        gang_id="g1" if gang else "",
        gang_cardinality=2 if gang else 0,
    )


def _observed(
    meta: ArmadaJobMetadata,
    state: int,
    error: str = "none",
    reason: Optional[str] = None,
    report: Optional[QueuedReport] = None,
    previous: Optional[int] = None,
    submitted_long_ago: bool = False,
) -> Observed:
    """What the connector's I/O would gather: only what the decision asks for is given."""
    details = None
    if needs_run_details(meta, state) and state != JobState.REJECTED:  # a rejected job never ran
        ended = NOW - (90.0 if error == "unreadable-late" else 5.0) if state in TERMINAL_STATES else 0.0
        details = RunDetails("arm64-0" if meta.any_of else "amd64-0", "c1", "", ended, NOW - WAITED)
    task_error, unreadable = None, ""
    if state in ERROR_FILE_STATES:
        task_error = ERRORS.get(error)
        unreadable = "timed out reading error.pb" if error.startswith("unreadable") else ""
    if needs_reason(state, task_error, unreadable):
        reason = REASONS.get(state, "") if reason is None else reason
    else:
        reason = ""
    now = NOW + 1000 if submitted_long_ago else NOW
    return Observed(state, now, details, task_error, unreadable, reason, report, previous)


@dataclass(frozen=True)
class Case:
    state: int
    error: str = "none"
    timeout: str = "none"
    gang: bool = False
    any_arch: bool = False
    reason: Optional[str] = None
    report: Optional[QueuedReport] = None
    previous: Optional[int] = None
    long_ago: bool = False
    # what Flyte must see
    phase: int = TaskExecution.RUNNING
    says: tuple[str, ...] = ()
    not_says: tuple[str, ...] = ()
    code: str = ""
    cancel: bool = False

    def __str__(self) -> str:
        state = JobState.name_of(self.state)
        flags = ("-gang" if self.gang else "") + ("-any" if self.any_arch else "")
        return f"{state}-{self.error}-timeout_{self.timeout}{flags}"


Q, INIT, RUN = TaskExecution.QUEUED, TaskExecution.INITIALIZING, TaskExecution.RUNNING
OK, FAIL, RETRY, ABORT = (
    TaskExecution.SUCCEEDED,
    TaskExecution.FAILED,
    TaskExecution.RETRYABLE_FAILED,
    TaskExecution.ABORTED,
)
GANG_WAIT = "waiting 100s for gang g1: Armada starts none of its 2 members"
TIMED_OUT_QUEUED = "TaskTimeout: Armada job j1 exceeded the task's timeout of 60s waiting to start"
TIMED_OUT_RUNNING = "TaskTimeout: Armada job j1 exceeded the task's timeout of 60s running"

CASES = [
    # ---- waiting to start: SUBMITTED, QUEUED, LEASED ----
    Case(JobState.SUBMITTED, phase=Q, says=("Armada job j1 is SUBMITTED",)),
    Case(
        JobState.SUBMITTED,
        timeout="over",
        phase=RETRY,
        says=(TIMED_OUT_QUEUED, "(it was SUBMITTED)"),
        code="TaskTimeout",
        cancel=True,
    ),
    Case(JobState.QUEUED, phase=Q, says=("Armada job j1 is QUEUED",)),
    Case(JobState.QUEUED, timeout="within", phase=Q, says=("Armada job j1 is QUEUED",)),
    Case(JobState.QUEUED, report=REPORT, phase=Q, says=(f"is QUEUED; why: {REPORT.message}",)),
    Case(JobState.QUEUED, gang=True, phase=Q, says=(GANG_WAIT, "no timeout is set")),
    Case(
        JobState.QUEUED,
        gang=True,
        timeout="within",
        phase=Q,
        says=(GANG_WAIT, "it fails once queued for the task's timeout of 600s"),
    ),
    Case(
        JobState.QUEUED,
        timeout="over",
        report=REPORT,
        phase=RETRY,
        says=(TIMED_OUT_QUEUED, f"; why: {REPORT.message}"),
        code="TaskTimeout",
        cancel=True,
    ),
    Case(
        JobState.QUEUED,
        timeout="over",
        gang=True,
        phase=RETRY,
        says=(TIMED_OUT_QUEUED, GANG_WAIT),
        code="TaskTimeout",
        cancel=True,
    ),
    Case(JobState.QUEUED, any_arch=True, phase=Q, says=("Armada job j1 is QUEUED",)),
    Case(JobState.LEASED, phase=Q, says=("Armada job j1 is LEASED",)),
    Case(JobState.LEASED, gang=True, phase=Q, says=(GANG_WAIT,)),
    Case(
        JobState.LEASED,
        timeout="over",
        phase=RETRY,
        says=(TIMED_OUT_QUEUED, "(it was LEASED)"),
        code="TaskTimeout",
        cancel=True,
    ),
    # ---- not visible yet: QUEUED (never ahead of what comes next), until the ack timeout ----
    Case(JobState.UNKNOWN, phase=Q, says=("Armada job j1 not visible yet",)),
    Case(JobState.UNKNOWN, long_ago=True, phase=FAIL, says=("Armada has not acknowledged job j1 after 1100s",)),
    # ---- started: PENDING, RUNNING ----
    Case(JobState.PENDING, phase=INIT, says=("Armada job j1 is PENDING",)),
    Case(
        JobState.PENDING,
        timeout="over",
        phase=RETRY,
        says=(TIMED_OUT_RUNNING, "(it was PENDING)"),
        code="TaskTimeout",
        cancel=True,
    ),
    Case(JobState.RUNNING, phase=RUN, says=("Armada job j1 is RUNNING",)),
    Case(JobState.RUNNING, timeout="within", phase=RUN, says=("Armada job j1 is RUNNING",)),
    Case(
        JobState.RUNNING,
        timeout="over",
        phase=RETRY,
        says=(TIMED_OUT_RUNNING, "the job was cancelled"),
        code="TaskTimeout",
        cancel=True,
    ),
    Case(JobState.RUNNING, gang=True, phase=RUN, says=("Armada job j1 is RUNNING",)),
    Case(JobState.RUNNING, any_arch=True, phase=RUN, says=("is RUNNING on arm64 (node arm64-0)",)),
    # ---- the phase never goes backwards: a lease returned after the run started ----
    Case(JobState.QUEUED, previous=RUN, phase=RUN, says=("Armada job j1 is QUEUED",)),
    Case(JobState.UNKNOWN, previous=Q, phase=Q, says=("not visible yet",)),
    Case(JobState.RUNNING, previous=Q, phase=RUN),
    Case(JobState.CANCELLED, previous=RUN, phase=ABORT, says=("was cancelled",)),
    # ---- SUCCEEDED ----
    Case(JobState.SUCCEEDED, phase=OK, says=("Armada job j1 on node amd64-0 succeeded",)),
    Case(JobState.SUCCEEDED, any_arch=True, phase=OK, says=("Armada job j1 on arm64 (node arm64-0) succeeded",)),
    Case(JobState.SUCCEEDED, timeout="over", gang=True, phase=OK, says=("succeeded",)),
    Case(
        JobState.SUCCEEDED,
        error="user",
        phase=RETRY,
        says=("ValueError: bad input (USER error, job j1 on node amd64-0)",),
        code="ValueError",
    ),
    Case(
        JobState.SUCCEEDED,
        error="unreadable",
        phase=RUN,
        says=("Armada job j1 ended; timed out reading error.pb; retrying",),
    ),
    Case(
        JobState.SUCCEEDED,
        error="unreadable-late",
        phase=RETRY,
        says=("BlobStoreUnreadable: Armada job j1 ended", "(SYSTEM error)"),
        code="BlobStoreUnreadable",
    ),
    # ---- FAILED ----
    Case(
        JobState.FAILED,
        phase=FAIL,
        says=("Armada job j1 on node amd64-0 failed: Container main failed with exit code 1",),
    ),
    Case(
        JobState.FAILED,
        error="user",
        phase=RETRY,
        says=("ValueError: bad input (USER error, job j1 on node amd64-0)",),
        code="ValueError",
    ),
    Case(
        JobState.FAILED,
        error="user-final",
        phase=FAIL,
        says=("NonRecoverableError: give up (USER error",),
        code="NonRecoverableError",
    ),
    Case(
        JobState.FAILED, error="system", phase=RETRY, says=("OOMKilled: out of memory (SYSTEM error",), code="OOMKilled"
    ),
    Case(
        JobState.FAILED,
        error="user",
        any_arch=True,
        phase=RETRY,
        says=("(USER error, job j1 on arm64 (node arm64-0))",),
        code="ValueError",
    ),
    Case(
        JobState.FAILED,
        error="wrong-elf",
        any_arch=True,
        phase=RETRY,
        says=(
            "image example.com/app:1 has no linux/arm64 variant: ImportError",
            "To fix: build the image for both platforms",
        ),
        code="ImportError",
    ),
    Case(JobState.FAILED, error="unreadable", phase=RUN, says=("ended; timed out reading error.pb; retrying",)),
    Case(
        JobState.FAILED, error="unreadable-late", phase=RETRY, says=("BlobStoreUnreadable",), code="BlobStoreUnreadable"
    ),
    Case(
        JobState.FAILED,
        timeout="within",
        reason=OTHER_REASONS["deadline"],
        phase=RETRY,
        says=(
            "TaskTimeout: Armada job j1 on node amd64-0 exceeded the task's timeout of 600s running",
            "(the pod's deadline)",
        ),
        code="TaskTimeout",
    ),
    Case(
        JobState.FAILED,
        reason=OTHER_REASONS["deadline"],
        phase=FAIL,
        says=("failed: Pod was active on the node longer",),
    ),
    Case(
        JobState.FAILED,
        reason=OTHER_REASONS["exec-format"],
        phase=FAIL,
        says=(
            "image example.com/app:1 has no linux/amd64 variant: Armada job j1 on node amd64-0 failed",
            "To fix: build the image",
        ),
    ),
    Case(JobState.FAILED, gang=True, phase=FAIL, says=("failed: Container main",)),
    Case(
        JobState.FAILED,
        reason=OTHER_REASONS["oom"],
        phase=RETRY,
        says=("OOMKilled: Armada job j1 on node amd64-0 went over the task's memory limit of 256Mi (it used 700Mi)",),
        not_says=("268435456",),  # the sizes once, not again in Armada's words
        code="OOMKilled",
    ),
    Case(
        JobState.FAILED,
        reason=OTHER_REASONS["oom-no-limit"],
        timeout="within",
        phase=RETRY,
        says=(
            "went over the task's memory limit; Armada's reason: Container main failed with exit code 137 because "
            "OOMKilled",
        ),
        code="OOMKilled",
    ),
    # ---- REJECTED (real Armada's wording), CANCELLED, PREEMPTED ----
    Case(
        JobState.REJECTED,
        phase=FAIL,
        says=(
            "was rejected by Armada: pool default",
            "To fix: the task asks for more resources than the nodes have: lower the task's resources",
        ),
    ),
    Case(
        JobState.REJECTED,
        reason=OTHER_REASONS["queue-limit"],
        phase=FAIL,
        says=("To fix: the task asks for {cpu: 64}, more than its queue's limit of {cpu: 16}",),
    ),
    Case(
        JobState.REJECTED,
        timeout="over",
        gang=True,
        any_arch=True,
        phase=FAIL,
        says=("Armada job j1 was rejected by Armada",),
    ),
    Case(
        JobState.FAILED,
        reason="Lease expired",
        phase=RETRY,
        says=("LeaseExpired: Armada job j1 on node amd64-0 lost its executor", "executorTimeout", "(SYSTEM error)"),
        code="LeaseExpired",
    ),
    Case(JobState.CANCELLED, phase=ABORT, says=("Armada job j1 on node amd64-0 was cancelled",)),
    Case(JobState.CANCELLED, timeout="over", phase=ABORT, says=("was cancelled",)),
    Case(
        JobState.PREEMPTED,
        phase=RETRY,
        says=(
            "Preempted: Armada job j1 on node amd64-0 was preempted: Preempted - preemption requested via API",
            "(SYSTEM error)",
        ),
        code="Preempted",
    ),
    Case(
        JobState.PREEMPTED,
        any_arch=True,
        phase=RETRY,
        says=("Preempted: Armada job j1 on arm64 (node arm64-0) was preempted",),
        code="Preempted",
    ),
]


def test_the_table_covers_every_armada_state():
    assert {case.state for case in CASES} == set(JobState.__members__.values())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_what_flyte_sees(case: Case):
    meta = _meta(case.timeout, case.gang, case.any_arch)
    seen = _observed(meta, case.state, case.error, case.reason, case.report, case.previous, case.long_ago)
    outcome = outcome_of(meta, seen, RULES)
    assert TaskExecution.Phase.Name(outcome.phase) == TaskExecution.Phase.Name(case.phase), outcome.message
    for part in case.says:
        assert part in outcome.message, outcome.message
    for part in case.not_says:
        assert part not in outcome.message, outcome.message
    assert (outcome.error.code if outcome.error else "") == case.code
    assert outcome.cancel == case.cancel
    assert outcome.info["armada_state"] == JobState.name_of(case.state)
    if outcome.error is not None:
        assert outcome.info["error"] == outcome.error.as_info()


def test_a_task_create_refused_fails_for_good_without_asking_armada():
    meta = ArmadaJobMetadata(task="t", refusal_code="ImagePlatformMismatch", refusal="no arm64 variant")
    outcome = outcome_of(meta, Observed(JobState.UNKNOWN, NOW), RULES)
    assert outcome.phase == TaskExecution.FAILED and outcome.message == "ImagePlatformMismatch: no arm64 variant"
    assert outcome.info == {
        "armada_state": "NOT_SUBMITTED",
        "error": {"code": "ImagePlatformMismatch", "kind": "USER", "recoverable": False, "message": "no arm64 variant"},
    }


def test_a_job_only_its_events_know_keeps_running_and_says_armadas_query_side_is_behind():
    meta = _meta()
    seen = replace(_observed(meta, JobState.RUNNING), now=NOW + 1000, from_events=True)
    outcome = outcome_of(meta, seen, RULES)
    assert outcome.phase == TaskExecution.RUNNING
    assert outcome.message.startswith("Armada job j1 is RUNNING by its job set's events; Armada's job status API")
    assert "does not know it 1100s after submit" in outcome.message and "lookout ingester" in outcome.message
    assert outcome.info["state_from"] == "events"


def test_a_job_its_events_show_ended_ends_as_they_say():
    meta = _meta()
    seen = replace(_observed(meta, JobState.SUCCEEDED), now=NOW + 1000, from_events=True)
    outcome = outcome_of(meta, seen, RULES)
    assert outcome.phase == TaskExecution.SUCCEEDED and outcome.info["state_from"] == "events"


def test_past_the_ack_window_unreadable_events_keep_the_task_waiting_rather_than_call_it_lost():
    seen = Observed(JobState.UNKNOWN, NOW + 1000, events_unreadable="Armada at a:1 is not reachable")
    outcome = outcome_of(_meta(), seen, RULES)
    assert outcome.phase == TaskExecution.QUEUED and "lost" in outcome.message  # "... tell whether it was lost"
    assert "could not be read to tell whether it was lost (Armada at a:1 is not reachable)" in outcome.message


def test_the_exit_codes_the_failed_event_listed_reach_custom_info():
    meta = _meta()
    seen = replace(_observed(meta, JobState.FAILED), exit_codes={"main": 3, "sidecar": 0})
    outcome = outcome_of(meta, seen, RULES)
    assert outcome.info["exit_codes"] == {"main": 3, "sidecar": 0} and outcome.info["node"] == "amd64-0"
    assert "exit_codes" not in outcome_of(meta, _observed(meta, JobState.FAILED), RULES).info


@pytest.mark.parametrize(
    "state, error, timeout, gang, any_arch",
    list(itertools.product(JobState.__members__.values(), ERROR_KINDS, TIMEOUTS, (False, True), (False, True))),
)
def test_rules_that_hold_for_every_combination(state, error, timeout, gang, any_arch):
    meta = _meta(timeout, gang, any_arch)
    outcome = outcome_of(meta, _observed(meta, state, error, previous=TaskExecution.RUNNING), RULES)
    grace = state in ERROR_FILE_STATES and error == "unreadable"
    if state in TERMINAL_STATES and not grace:
        assert outcome.terminal, outcome.message
    if not outcome.terminal:  # a task that ran never reads as earlier again
        assert outcome.phase == TaskExecution.RUNNING, outcome.message
    if outcome.phase == TaskExecution.SUCCEEDED:
        assert state == JobState.SUCCEEDED and outcome.error is None
    if outcome.phase == TaskExecution.RETRYABLE_FAILED:
        assert outcome.error is not None and outcome.error.recoverable
    if outcome.cancel:
        assert state not in TERMINAL_STATES and outcome.error.code == "TaskTimeout" and timeout == "over"
    if outcome.error is not None and outcome.error.code == "TaskTimeout":
        assert outcome.error.kind == "USER", "a timeout is the task's own limit, the same kind wherever it shows"
    assert outcome.info["armada_state"] == JobState.name_of(state)


@pytest.mark.parametrize(
    ("state", "ran"), [(JobState.REJECTED, False), (JobState.FAILED, True), (JobState.PREEMPTED, True)]
)
def test_an_end_whose_reason_real_armada_has_not_written_yet_is_waited_for_then_reported_without_it(state, ran):
    """Real Armada's GetJobErrors reads what its lookout ingester wrote: "" for a moment after the event."""
    meta = _meta()
    ended = NOW - 2.0
    details = RunDetails("amd64-0", "c1", "", ended, NOW - WAITED) if ran else None
    fresh = replace(meta, submitted_at=ended) if not ran else meta
    waiting = outcome_of(fresh, Observed(state, NOW, details, None, "", ""), RULES)
    assert not waiting.terminal
    assert waiting.phase == (RUN if ran else Q)
    assert "waiting for Armada's reason" in waiting.message
    later = outcome_of(fresh, Observed(state, NOW + 30.0, details, None, "", ""), RULES)
    assert later.terminal and "waiting" not in later.message
    explained = outcome_of(fresh, Observed(state, NOW, details, None, "", REASONS[state]), RULES)
    assert explained.terminal and REASONS[state].splitlines()[0] in explained.message


def test_a_queued_timeout_reads_a_fresh_scheduling_report():
    """The report kept from the job's first seconds may predate every round that considered it (seen on
    real Armada: "the latest round did not consider it" where the blockers were the reason)."""
    meta = ArmadaJobMetadata(job_id="j", queue="q", job_set_id="s", submitted_at=NOW - 5, queued_timeout_seconds=4)
    assert queued_report_max_age(meta, NOW, refresh_seconds=30) == 0
    assert queued_report_max_age(replace(meta, queued_timeout_seconds=10), NOW, refresh_seconds=30) == 30
    assert queued_report_max_age(replace(meta, queued_timeout_seconds=0), NOW, refresh_seconds=30) == 30


def test_custom_info_names_the_cluster_that_ran_the_job():
    """Many clusters under one Armada: the run's executor (Armada's cluster id) says where the task ran."""
    meta = _meta()
    assert outcome_of(meta, _observed(meta, JobState.SUCCEEDED), RULES).info["cluster"] == "c1"
