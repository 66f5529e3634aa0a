"""Cancelling jobs: Submit.CancelJobs and CancelJobSet, and what is left behind (nothing)."""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.typings import JobState

from support.job_events import event_kinds, job_set_events, kind
from support.pods import cluster, item, node_set, pod, preemptible, python, sleeper, submit_one, unique
from support.process_checks import is_alive, pids_in_log
from support.waiting import state_of, wait_for_a_scheduling_pass, wait_for_state, wait_until

CANCELLED, RUNNING, SUCCEEDED, QUEUED = (
    submit_pb2.CANCELLED,
    submit_pb2.RUNNING,
    submit_pb2.SUCCEEDED,
    submit_pb2.QUEUED,
)
PREEMPTED = submit_pb2.PREEMPTED

# A pod whose main process starts a child in its process group and a grandchild in a session of
# its own (escaping the group), prints their pids, and then waits.
SPAWNER = """
import subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
escaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
print("main", __import__("os").getpid(), flush=True)
print("child", child.pid, flush=True)
print("escaped", escaped.pid, flush=True)
time.sleep(300)
"""


def test_cancelling_a_job_reports_it_and_ends_cancelled(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    result = client.cancel_jobs(queue, job_set, job_id)
    assert list(result.cancelled_ids) == [job_id]
    wait_for_state(client, job_id, CANCELLED)


def test_cancelling_a_finished_job_changes_nothing(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(["true"])))
    wait_for_state(client, job_id, SUCCEEDED)
    client.cancel_jobs(queue, job_set, job_id)
    assert state_of(client, job_id) == SUCCEEDED


def test_cancelling_a_job_set_cancels_all_its_jobs(client: ArmadaClient, queue: str, job_set: str) -> None:
    ids = [
        i.job_id
        for i in client.submit_jobs(queue, job_set, [item(sleeper(cpu="100m")) for _ in range(3)]).job_response_items
    ]
    client.cancel_jobset(queue, job_set, [])
    for job_id in ids:
        wait_for_state(client, job_id, CANCELLED)


@pytest.mark.embedded_only
@pytest.mark.parametrize(
    "stop, end_state",
    [
        (lambda client, queue, job_set, job_id: client.cancel_jobs(queue, job_set, job_id), CANCELLED),
        (lambda client, queue, job_set, job_id: client.preempt_jobs(queue, job_set, job_id), PREEMPTED),
    ],
    ids=["cancel", "preempt"],
)
def test_stopping_a_job_kills_the_whole_process_tree(
    embedded_armada, client: ArmadaClient, queue: str, job_set: str, stop, end_state
) -> None:
    job_id = submit_one(client, queue, job_set, item(preemptible(pod(python(SPAWNER), cpu="100m"))))
    wait_for_state(client, job_id, RUNNING)
    lines = wait_until(lambda: (log := embedded_armada.logs(job_id)) and len(log) >= 3 and log, what="the pids")
    pids = pids_in_log(lines, "main") + pids_in_log(lines, "child") + pids_in_log(lines, "escaped")
    assert len(pids) == 3 and all(is_alive(pid) for pid in pids)
    stop(client, queue, job_set, job_id)
    wait_for_state(client, job_id, end_state)
    wait_until(lambda: not any(is_alive(pid) for pid in pids), what=f"pids {pids} to be gone")


@pytest.mark.embedded_only
def test_a_pod_ending_takes_its_background_processes_with_it(
    embedded_armada, client: ArmadaClient, queue: str, job_set: str
) -> None:
    code = "import subprocess; p = subprocess.Popen(['sleep', '300']); print('child', p.pid, flush=True)"
    job_id = submit_one(client, queue, job_set, item(pod(python(code), cpu="100m")))
    wait_for_state(client, job_id, SUCCEEDED)
    [child] = pids_in_log(embedded_armada.logs(job_id), "child")
    wait_until(lambda: not is_alive(child), what="the background child to be gone")


@pytest.mark.embedded_only
def test_a_pod_ending_takes_processes_in_their_own_session_with_it(
    embedded_armada, client, queue: str, job_set: str
) -> None:
    code = "import subprocess; p = subprocess.Popen(['sleep', '300'], start_new_session=True); print('escaped', p.pid)"
    job_id = submit_one(client, queue, job_set, item(pod(python(code), cpu="100m")))
    wait_for_state(client, job_id, SUCCEEDED)
    [escaped] = pids_in_log(embedded_armada.logs(job_id), "escaped")
    wait_until(lambda: not is_alive(escaped), timeout=5, what="the process in a session of its own to be gone")


@pytest.mark.embedded_only
def test_cancelling_a_job_set_can_be_limited_to_states(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="1")))
    running = submit_one(client, "conformance", "js", item(sleeper(cpu="1")))
    wait_for_state(client, running, RUNNING)
    queued = submit_one(client, "conformance", "js", item(sleeper(cpu="1")))
    wait_for_a_scheduling_pass(client, "conformance", "js")
    client.cancel_jobset("conformance", "js", [JobState.QUEUED])
    wait_for_state(client, queued, CANCELLED)
    assert state_of(client, running) == RUNNING


@pytest.mark.parametrize("states", [[submit_pb2.PENDING], [submit_pb2.RUNNING]], ids=["pending", "running"])
def test_pending_and_running_only_filter_a_job_set_cancel_together(
    client: ArmadaClient, queue: str, job_set: str, states: list[int]
) -> None:
    request = submit_pb2.JobSetCancelRequest(
        queue=queue, job_set_id=job_set, filter=submit_pb2.JobSetFilter(states=states)
    )
    with pytest.raises(grpc.RpcError) as error:
        client.submit_stub.CancelJobSet(request)
    # ValidateJobSetFilter (internal/server/submit/validation/job_set.go) returns a plain error: UNKNOWN
    assert error.value.code() == grpc.StatusCode.UNKNOWN
    assert "PENDING and RUNNING must always be used together" in error.value.details()


@pytest.mark.embedded_only
def test_cancelling_pending_and_running_cancels_leased_jobs_and_leaves_queued_ones(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="1")), paused=True)
    leased = submit_one(client, "conformance", "js", item(sleeper(cpu="1")))
    wait_for_state(client, leased, submit_pb2.LEASED)
    queued = submit_one(client, "conformance", "js", item(sleeper(cpu="1")))
    wait_for_a_scheduling_pass(client, "conformance", "js")
    client.cancel_jobset("conformance", "js", [JobState.PENDING, JobState.RUNNING])
    # handleCancelJobSet (internal/scheduleringester/instructions.go): PENDING or RUNNING cancels every leased job
    wait_for_state(client, leased, CANCELLED)
    wait_for_state(client, queued, submit_pb2.LEASED)  # not cancelled: it takes the node the other left


@pytest.mark.embedded_only
def test_a_job_set_cancel_by_any_other_state_cancels_queued_jobs(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="1")))
    running = submit_one(client, "conformance", "js", item(sleeper(cpu="1")))
    wait_for_state(client, running, RUNNING)
    queued = submit_one(client, "conformance", "js", item(sleeper(cpu="1")))
    wait_for_a_scheduling_pass(client, "conformance", "js")
    request = submit_pb2.JobSetCancelRequest(
        queue="conformance", job_set_id="js", filter=submit_pb2.JobSetFilter(states=[submit_pb2.SUCCEEDED])
    )
    client.submit_stub.CancelJobSet(request)  # submit.go maps any state but PENDING and RUNNING to QUEUED
    wait_for_state(client, queued, CANCELLED)
    assert state_of(client, running) == RUNNING


def test_cancel_needs_a_job_set(client: ArmadaClient, queue: str) -> None:
    with pytest.raises(grpc.RpcError) as error:
        client.submit_stub.CancelJobs(submit_pb2.JobCancelRequest(queue=queue, job_set_id="", job_ids=["x"]))
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert 'for field "JobSetId": jobset cannot be empty' in error.value.details()  # validation/job_set.go


def test_cancel_in_an_unknown_queue_is_unknown(client: ArmadaClient) -> None:
    with pytest.raises(grpc.RpcError) as error:
        client.cancel_jobs(unique("nowhere"), "js", "x")
    # `authorize` in internal/server/submit/submit.go returns the queue cache's error as it is
    assert error.value.code() == grpc.StatusCode.UNKNOWN
    assert "could not find queue" in error.value.details()


def test_cancelling_unknown_ids_answers_them(client: ArmadaClient, queue: str, job_set: str) -> None:
    assert list(client.cancel_jobs(queue, job_set, "no-such-job").cancelled_ids) == ["no-such-job"]


def test_cancelling_without_ids_cancels_the_job_set(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    result = client.submit_stub.CancelJobs(submit_pb2.JobCancelRequest(queue=queue, job_set_id=job_set))
    assert list(result.cancelled_ids) == [""]  # CancelJobs in submit/submit.go answers the empty job_id
    wait_for_state(client, job_id, CANCELLED)


@pytest.mark.parametrize(
    "call",
    [
        lambda client, queue, job_set, reason: client.submit_stub.CancelJobs(
            submit_pb2.JobCancelRequest(queue=queue, job_set_id=job_set, job_ids=["x"], reason=reason)
        ),
        lambda client, queue, job_set, reason: client.submit_stub.PreemptJobs(
            submit_pb2.JobPreemptRequest(queue=queue, job_set_id=job_set, job_ids=["x"], reason=reason)
        ),
        lambda client, queue, job_set, reason: client.submit_stub.CancelJobSet(
            submit_pb2.JobSetCancelRequest(queue=queue, job_set_id=job_set, reason=reason)
        ),
    ],
    ids=["cancel", "preempt", "cancel-job-set"],
)
def test_a_reason_over_50_bytes_is_invalid(client: ArmadaClient, queue: str, job_set: str, call) -> None:
    call(client, queue, job_set, "r" * 50)
    with pytest.raises(grpc.RpcError) as error:
        call(client, queue, job_set, "é" * 26)  # 52 bytes: the limit is in bytes (validation/job_set.go)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "reason cannot be longer than 50 bytes" in error.value.details()


def test_cancel_events_carry_no_reason(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    client.submit_stub.CancelJobs(
        submit_pb2.JobCancelRequest(queue=queue, job_set_id=job_set, job_ids=[job_id], reason="done with it")
    )
    wait_for_state(client, job_id, CANCELLED)
    kinds = wait_until(
        lambda: (k := event_kinds(client, queue, job_set, job_id)) and k[-1] == "cancelled" and k,
        what="the cancelled event",
    )
    assert kinds[-2:] == ["cancelling", "cancelled"]
    # FromInternalCancel / FromInternalCancelled (internal/server/event/conversion/conversions.go) set no reason
    cancels = [m for m in job_set_events(client, queue, job_set) if kind(m) in ("cancelling", "cancelled")]
    assert [getattr(m.message, kind(m)).reason for m in cancels] == ["", ""]


def test_job_details_keep_the_cancel_reason(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    client.submit_stub.CancelJobs(
        submit_pb2.JobCancelRequest(queue=queue, job_set_id=job_set, job_ids=[job_id], reason="done with it")
    )
    wait_for_state(client, job_id, CANCELLED)
    assert client.get_job_details([job_id]).job_details[job_id].cancel_reason == "done with it"


def test_a_job_set_cancel_gives_only_cancelled_events(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    client.cancel_jobset(queue, job_set, [])
    wait_for_state(client, job_id, CANCELLED)
    kinds = wait_until(
        lambda: (k := event_kinds(client, queue, job_set, job_id)) and k[-1] == "cancelled" and k,
        what="the cancelled event",
    )
    assert "cancelling" not in kinds  # CancelJobSet converts to no api event (conversions.go)
