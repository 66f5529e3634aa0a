"""What a job set's events say about a job's run stands in for GetJobDetails and GetJobErrors.

Real Armada's failed events carry exit codes in `container_statuses[].exitCode` and leave
`exit_codes` empty (`internal/server/event/conversion/conversions.go`).
"""

from __future__ import annotations

import pytest
from armada_client.armada import event_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from armada_flyte.armada_names import JobState
from armada_flyte.connector.poll.job_set_streams import RunFacts, gangs_in, jobs_in, state_after, submissions_in

pytestmark = pytest.mark.pure


def _at(seconds: int) -> Timestamp:
    return Timestamp(seconds=seconds)


def _run(*events: tuple[str, object]) -> RunFacts:
    facts = RunFacts()
    for kind, event in events:
        facts = facts.after(kind, event)
    return facts


RUNNING = ("running", event_pb2.JobRunningEvent(job_id="j", created=_at(100), node_name="n1", cluster_id="c"))


def test_a_failure_gives_node_times_reason_and_each_containers_exit_code():
    statuses = [event_pb2.ContainerStatus(name="main", exitCode=3), event_pb2.ContainerStatus(name="side", exitCode=0)]
    failed = event_pb2.JobFailedEvent(
        job_id="j", created=_at(130), node_name="n1", reason="Container main failed", container_statuses=statuses
    )
    facts = _run(RUNNING, ("failed", failed))
    assert (facts.node, facts.cluster, facts.started_at, facts.finished_at) == ("n1", "c", 100.0, 130.0)
    assert facts.reason == "Container main failed" and dict(facts.exit_codes) == {"main": 3, "side": 0}
    assert facts.covers(JobState.FAILED)


def test_a_success_covers_the_end_and_a_running_job_its_start_only():
    succeeded = event_pb2.JobSucceededEvent(job_id="j", created=_at(120))  # real Armada's: no node_name
    assert _run(RUNNING).covers(JobState.RUNNING) and not _run(RUNNING).covers(JobState.SUCCEEDED)
    assert _run(RUNNING, ("succeeded", succeeded)).covers(JobState.SUCCEEDED)
    assert not RunFacts().covers(JobState.PENDING)


def test_a_success_with_no_running_event_leaves_the_node_to_ask_for():
    """Armada's executor reports a pod it first sees already finished with no running event, and the
    succeeded event names no node: the node (an `any` job's architecture) is GetJobDetails' to give."""
    succeeded = event_pb2.JobSucceededEvent(job_id="j", created=_at(120))
    leased = event_pb2.JobLeasedEvent(job_id="j", created=_at(90), cluster_id="c")
    assert not _run(("leased", leased), ("succeeded", succeeded)).covers(JobState.SUCCEEDED)


def test_a_rejections_reason_and_a_reasonless_failure_are_left_to_ask_for():
    rejected = event_pb2.JobFailedEvent(job_id="j", created=_at(5), reason="pool default", cause=event_pb2.Rejected)
    bare = event_pb2.JobFailedEvent(job_id="j", created=_at(5))
    assert _run(("failed", rejected)).reason is None and _run(("failed", bare)).reason is None


def test_a_run_given_back_forgets_what_was_known_of_it():
    returned = event_pb2.JobLeaseReturnedEvent(job_id="j", created=_at(110))
    assert _run(RUNNING, ("lease_returned", returned)) == RunFacts()


def test_a_run_failure_armada_runs_again_forgets_the_run_and_leaves_the_job_queued():
    """Armada 0.22's retry policy requeues a job whose run failed (a lost executor's lease expired, say) and
    marks that failed event `retryable`: the job has not ended, the next events are the new run's."""
    retried = event_pb2.JobFailedEvent(job_id="j", created=_at(130), reason="Lease expired", retryable=True)
    assert state_after("failed", retried) == JobState.QUEUED
    assert _run(RUNNING, ("failed", retried)) == RunFacts()


@pytest.mark.parametrize(
    "event, state",
    [
        (event_pb2.JobFailedEvent(job_id="j", reason="Lease expired"), JobState.FAILED),
        (event_pb2.JobFailedEvent(job_id="j", cause=event_pb2.Rejected), JobState.REJECTED),
    ],
    ids=["the last run failed", "rejected"],
)
def test_a_failed_event_not_marked_retryable_ends_the_job(event, state):
    assert state_after("failed", event) == state


def test_events_that_say_nothing_of_the_state_move_nothing():
    assert state_after("utilisation", event_pb2.JobUtilisationEvent(job_id="j")) is None


def _message(kind: str, event: object) -> event_pb2.EventStreamMessage:
    return event_pb2.EventStreamMessage(id=kind, message=event_pb2.EventMessage(**{kind: event}))


def test_a_job_sets_events_read_once_give_each_jobs_last_state_and_an_end_stays_an_end():
    """What the connector reads when the job status API doesn't know a job: the job set's events alone."""
    messages = [
        _message("submitted", event_pb2.JobSubmittedEvent(job_id="j")),
        _message("submitted", event_pb2.JobSubmittedEvent(job_id="k")),
        _message("running", RUNNING[1]),
        _message("succeeded", event_pb2.JobSucceededEvent(job_id="j", created=_at(140), node_name="n1")),
        _message("running", event_pb2.JobRunningEvent(job_id="j", created=_at(150))),  # late: changes no state
        _message("failed", event_pb2.JobFailedEvent(job_id="k", cause=event_pb2.Rejected, reason="too big")),
    ]
    jobs = jobs_in(messages)
    assert set(jobs) == {"j", "k"}
    state, run = jobs["j"]
    assert state == JobState.SUCCEEDED and (run.node, run.ended, run.finished_at) == ("n1", True, 140.0)
    assert jobs["k"][0] == JobState.REJECTED and jobs["k"][1].reason is None  # a rejection's reason: GetJobErrors


def test_a_job_sets_events_say_which_jobs_form_each_gang():
    """Real Armada's submitted event carries the job with its annotations, the gang id among them: a member reads
    from its job set's events which jobs are its step's siblings (each step's gang has an id of its own)."""
    from armada_client.armada import submit_pb2

    from armada_flyte.armada_names import GANG_ID

    def submitted(job_id: str, gang: str = "") -> event_pb2.EventStreamMessage:
        job = submit_pb2.Job(id=job_id, annotations={GANG_ID: gang} if gang else {})
        return _message("submitted", event_pb2.JobSubmittedEvent(job_id=job_id, job=job))

    messages = [
        submitted("a", "g-r1"),
        submitted("b", "g-r1"),
        submitted("c", "g-r1-amd64"),
        submitted("d"),
        _message("failed", event_pb2.JobFailedEvent(job_id="a", reason="exec format error")),
    ]
    assert gangs_in(messages) == {"a": "g-r1", "b": "g-r1", "c": "g-r1-amd64"}


def test_a_job_sets_events_say_whether_a_step_was_submitted_before_the_one_before_it_ended():
    """A move at once while queued submits the next step's job, then cancels the queued one; a spill cancels first
    and submits after. The events' order (never their clocks) tells the two apart, for any replica."""
    from armada_client.armada import submit_pb2

    def submitted(job_id: str, client_id: str) -> event_pb2.EventStreamMessage:
        job = submit_pb2.Job(id=job_id, client_id=client_id)
        return _message("submitted", event_pb2.JobSubmittedEvent(job_id=job_id, job=job))

    def cancelled(job_id: str) -> event_pb2.EventStreamMessage:
        return _message("cancelled", event_pb2.JobCancelledEvent(job_id=job_id))

    moved_at_once = submissions_in([submitted("a0", "t-0"), submitted("a1", "t-1amd64"), cancelled("a0")])
    assert moved_at_once.before_end("t-1amd64", "a0") == "a1" and "a0" in moved_at_once.ended
    spilled = submissions_in([submitted("b0", "u-0"), cancelled("b0"), submitted("b1", "u-1amd64")])
    assert spilled.before_end("u-1amd64", "b0") == "" and "b0" in spilled.ended
    cancel_not_through = submissions_in([submitted("c0", "v-0"), submitted("c1", "v-1amd64")])
    assert cancel_not_through.before_end("v-1amd64", "c0") == "c1" and "c0" not in cancel_not_through.ended
    assert submissions_in([submitted("d0", "w-0"), cancelled("d0")]).before_end("w-1amd64", "d0") == ""
