"""Cancelling jobs: Submit.CancelJobs and CancelJobSet, and what is left behind (nothing)."""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.typings import JobState

from support.pods import cluster, item, node_group, pod, python, sleeper, submit_one, unique
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
    job_id = submit_one(client, queue, job_set, item(pod(python(SPAWNER), cpu="100m")))
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
    _, client = own_armada(cluster(node_group("amd64", nodes=1, cpu="1")))
    running = submit_one(client, "conformance", "js", item(sleeper(cpu="1")))
    wait_for_state(client, running, RUNNING)
    queued = submit_one(client, "conformance", "js", item(sleeper(cpu="1")))
    wait_for_a_scheduling_pass(client, "conformance", "js")
    client.cancel_jobset("conformance", "js", [JobState.QUEUED])
    wait_for_state(client, queued, CANCELLED)
    assert state_of(client, running) == RUNNING


def test_cancelling_a_job_set_by_an_unknown_state_is_invalid(client: ArmadaClient, queue: str, job_set: str) -> None:
    request = submit_pb2.JobSetCancelRequest(
        queue=queue, job_set_id=job_set, filter=submit_pb2.JobSetFilter(states=[99])
    )
    with pytest.raises(grpc.RpcError) as error:
        client.submit_stub.CancelJobSet(request)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "99" in error.value.details()


def test_cancel_needs_a_job_set(client: ArmadaClient, queue: str) -> None:
    with pytest.raises(grpc.RpcError) as error:
        client.submit_stub.CancelJobs(submit_pb2.JobCancelRequest(queue=queue, job_set_id="", job_ids=["x"]))
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_cancel_in_an_unknown_queue_is_permission_denied(client: ArmadaClient) -> None:
    with pytest.raises(grpc.RpcError) as error:
        client.cancel_jobs(unique("nowhere"), "js", "x")
    assert error.value.code() == grpc.StatusCode.PERMISSION_DENIED
