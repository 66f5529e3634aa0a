"""Queues: Submit/QueueService CreateQueue(s), UpdateQueue, GetQueue(s), DeleteQueue, as Armada answers them.

Creating and updating are one upsert in Armada (`upsertQueue` in
internal/server/queue/queue_repository.go), and deleting doesn't look at the queue's jobs.
"""

from __future__ import annotations

import math
import time

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from support.pods import item, pod, preemptible, sleeper, submit_one, unique
from support.real_armada import wait_until_queue_accepts
from support.waiting import state_of, wait_for_a_scheduling_pass, wait_for_state, wait_until


def queue_request(client: ArmadaClient, name: str, priority_factor: float = 1.0):
    return client.create_queue_request(name, priority_factor=priority_factor)


def fresh_queue(client: ArmadaClient, cordoned: bool = False) -> str:
    """A new queue, once the server takes submits to it (real Armada's server sees it after its queue cache
    refresh; a probe job submitted to it is cancelled at once)."""
    name = unique("q")
    request = queue_request(client, name)
    request.cordoned = cordoned  # CreateQueue keeps the flag: NewQueue in pkg/client/queue/queue.go
    client.create_queue(request)
    wait_until_queue_accepts(client, name)
    return name


def test_created_queue_can_be_read_back(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name, priority_factor=2.0))
    queue = client.get_queue(name)
    assert (queue.name, queue.priority_factor) == (name, 2.0)


def test_creating_an_existing_queue_overwrites_it(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    client.create_queue(queue_request(client, name, priority_factor=5.0))
    assert client.get_queue(name).priority_factor == 5.0


def test_a_created_queue_grants_its_owner_every_verb(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    [permission] = client.get_queue(name).permissions  # NewPermissionsFromOwners, pkg/client/queue/permissions.go
    assert list(permission.verbs) == ["submit", "cancel", "preempt", "reprioritize", "watch"]
    assert [subject.kind for subject in permission.subjects] == ["User"]


def test_priority_factor_below_one_is_invalid(client: ArmadaClient) -> None:
    with pytest.raises(grpc.RpcError) as error:
        client.create_queue(queue_request(client, unique("q"), priority_factor=0.5))
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "priority factor cannot be lower than 1.0" in error.value.details()  # pkg/client/queue


@pytest.mark.parametrize("factor", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_a_priority_factor_that_is_no_finite_number_is_taken_and_other_queues_still_run(
    client: ArmadaClient, job_set: str, factor: float
) -> None:
    """Armada v0.22.7 stores a NaN or infinite priority factor (queue_repository.go checks only `< 1`); the
    embedded server takes it too, and its fair share must not turn NaN and stop the other queues."""
    odd = unique("q")
    client.create_queue(queue_request(client, odd, priority_factor=factor))
    stored = client.get_queue(odd).priority_factor
    assert math.isnan(stored) if math.isnan(factor) else stored == factor
    wait_until_queue_accepts(client, odd)
    plain = fresh_queue(client)
    submit_one(client, odd, job_set, item(pod()))
    job_id = submit_one(client, plain, job_set, item(pod()))
    assert wait_for_state(client, job_id, submit_pb2.SUCCEEDED, submit_pb2.FAILED, timeout=120) == submit_pb2.SUCCEEDED


def test_unknown_queue_is_not_found(client: ArmadaClient) -> None:
    missing = unique("missing")
    with pytest.raises(grpc.RpcError) as error:
        client.get_queue(missing)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    assert f'could not find queue "{missing}"' in error.value.details()


def test_update_changes_the_queue(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    client.update_queue(queue_request(client, name, priority_factor=3.0))
    assert client.get_queue(name).priority_factor == 3.0


def test_updating_an_unknown_queue_creates_it(client: ArmadaClient) -> None:
    name = unique("fresh")
    client.update_queue(queue_request(client, name, priority_factor=2.0))
    assert client.get_queue(name).priority_factor == 2.0


def test_batch_create_reports_only_the_failures(client: ArmadaClient) -> None:
    existing, fresh, invalid = unique("q"), unique("q"), unique("q")
    client.create_queue(queue_request(client, existing))
    requests = [queue_request(client, existing), queue_request(client, fresh), queue_request(client, invalid, 0.5)]
    response = client.create_queues(requests)
    assert [failure.queue.name for failure in response.failed_queues] == [invalid]
    assert client.get_queue(fresh).name == fresh


def test_get_queues_lists_created_queues(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    assert name in {queue.name for queue in client.get_queues()}


def test_deleted_queue_is_gone(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    client.delete_queue(name)
    with pytest.raises(grpc.RpcError) as error:
        client.get_queue(name)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    assert f'could not find queue "{name}"' in error.value.details()


def test_a_queue_with_running_jobs_can_be_deleted(client: ArmadaClient, job_set: str) -> None:
    name = fresh_queue(client)
    job_id = submit_one(client, name, job_set, item(sleeper(cpu="100m")))
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    client.cancel_jobs(name, job_set, job_id)
    client.delete_queue(name)  # DeleteQueue in queue_repository.go checks no jobs
    with pytest.raises(grpc.RpcError) as error:
        client.get_queue(name)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    assert f'could not find queue "{name}"' in error.value.details()


def test_reprioritizing_a_job_set_of_a_queue_that_never_had_a_job_answers(client: ArmadaClient) -> None:
    name = fresh_queue(client)
    response = client.reprioritize_jobs(new_priority=1.0, job_ids=[], job_set_id="js", queue=name)
    # ReprioritizeJobs in internal/server/submit/submit.go: one result for the whole job set
    assert dict(response.reprioritization_results) == {"all jobs in job set js": ""}


def test_cordon_and_uncordon_set_the_queues_flag(client: ArmadaClient) -> None:
    name = fresh_queue(client)
    client.queue_stub.CordonQueue(submit_pb2.QueueCordonRequest(name=name))
    assert client.get_queue(name).cordoned
    client.queue_stub.UncordonQueue(submit_pb2.QueueUncordonRequest(name=name))
    assert not client.get_queue(name).cordoned


def test_a_cordoned_queue_schedules_nothing_until_uncordoned(client: ArmadaClient, queue: str, job_set: str) -> None:
    # Created cordoned: real Armada's scheduler reads queues from a cache refreshed every queueRefreshPeriod
    # (internal/scheduler/queue), so a queue cordoned after creation may still be scheduled for a round or
    # two; a queue it has never seen uncordoned is never scheduled (an unknown queue's jobs are skipped,
    # calculateJobSchedulingInfo in scheduling_algo.go).
    name = fresh_queue(client, cordoned=True)
    assert client.get_queue(name).cordoned
    job_id = submit_one(client, name, job_set, item(pod(["true"])))
    # The sentinel goes to another queue: real Armada considers nothing of a cordoned queue, not even to reject it.
    wait_for_a_scheduling_pass(client, queue, job_set)
    assert state_of(client, job_id) == submit_pb2.QUEUED  # constraints.go: "queue cordoned"
    client.queue_stub.UncordonQueue(submit_pb2.QueueUncordonRequest(name=name))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)


def test_cordoning_an_unknown_queue_is_unknown(client: ArmadaClient) -> None:
    missing = unique("missing")
    with pytest.raises(grpc.RpcError) as error:
        client.queue_stub.CordonQueue(submit_pb2.QueueCordonRequest(name=missing))
    assert error.value.code() == grpc.StatusCode.UNKNOWN  # queue_service.go returns the repository's error
    assert f'could not find queue "{missing}"' in error.value.details()


def test_cancel_on_queue_cancels_the_jobs_in_the_given_states(client: ArmadaClient, job_set: str) -> None:
    name = fresh_queue(client)
    running = submit_one(client, name, job_set, item(sleeper(cpu="100m")))
    wait_for_state(client, running, submit_pb2.RUNNING)
    request = submit_pb2.QueueCancelRequest(name=name, jobStates=[submit_pb2.RUNNING])

    def cancelled() -> bool:
        # Real Armada's scheduler ingester picks the jobs by the states in its own database, which can trail the
        # query API's RUNNING by a moment; a job not yet running there is passed over (selectAllJobsByQueueAndJobState
        # in internal/scheduleringester/schedulerdb.go), so the request is sent again until it takes.
        client.queue_stub.CancelOnQueue(request)
        resent_at = time.monotonic() + 5.0
        while time.monotonic() < resent_at:
            if state_of(client, running) == submit_pb2.CANCELLED:
                return True
            time.sleep(0.1)
        return False

    wait_until(cancelled, 60.0, f"job {running} to be cancelled by CancelOnQueue")


def test_cancel_on_queue_refuses_terminal_states(client: ArmadaClient) -> None:
    request = submit_pb2.QueueCancelRequest(name=fresh_queue(client), jobStates=[submit_pb2.SUCCEEDED])
    with pytest.raises(grpc.RpcError) as error:
        client.queue_stub.CancelOnQueue(request)
    assert error.value.code() == grpc.StatusCode.UNKNOWN
    assert "provided job states must be non-terminal" in error.value.details()  # queue_service.go


def test_preempt_on_queue_preempts_its_preemptible_jobs(client: ArmadaClient, job_set: str) -> None:
    name = fresh_queue(client)
    steady = submit_one(client, name, job_set, item(sleeper(cpu="100m")))
    yielding = submit_one(client, name, job_set, item(preemptible(sleeper(cpu="100m"))))
    wait_for_state(client, steady, submit_pb2.RUNNING)
    wait_for_state(client, yielding, submit_pb2.RUNNING)
    client.queue_stub.PreemptOnQueue(submit_pb2.QueuePreemptRequest(name=name))
    wait_for_state(client, yielding, submit_pb2.PREEMPTED)
    assert state_of(client, steady) == submit_pb2.RUNNING
    client.cancel_jobset(name, job_set, [])
