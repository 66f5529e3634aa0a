"""Armada's server-side rules: priority classes, the defaults stored with a job, priorities,
preemption, reprioritization, deduplication and GetActiveQueues."""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import job_pb2, submit_pb2
from armada_client.client import ArmadaClient

from support.job_events import event_kinds, job_set_events, kind
from support.pods import item, pod, preemptible, sleeper, submit_one, unique
from support.waiting import state_of, stored_job, wait_for_state, wait_until

RUNNING, PREEMPTED = submit_pb2.RUNNING, submit_pb2.PREEMPTED


def job_spec(client: ArmadaClient, job_id: str) -> submit_pb2.Job:
    return stored_job(client, job_id).job_spec


def events_of(client: ArmadaClient, queue: str, job_set: str, job_id: str, until: str) -> list:
    def reached() -> list:
        mine = [m for m in job_set_events(client, queue, job_set) if getattr(m.message, kind(m)).job_id == job_id]
        return mine if any(kind(m) == until for m in mine) else []

    return wait_until(reached, what=f"the {until} event of {job_id}")


def test_an_unknown_priority_class_is_invalid(client: ArmadaClient, queue: str, job_set: str) -> None:
    spec = pod()
    spec.priorityClassName = "urgent"
    with pytest.raises(grpc.RpcError) as error:
        client.submit_jobs(queue, job_set, [item(spec)])
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "priority class urgent is not supported" in error.value.details()  # validation/submit_request.go


@pytest.mark.parametrize("name", ["armada-default", "armada-preemptible", "armada-resilient"])
def test_armadas_priority_classes_are_accepted(client: ArmadaClient, queue: str, job_set: str, name: str) -> None:
    spec = pod()
    spec.priorityClassName = name
    assert client.submit_jobs(queue, job_set, [item(spec)]).job_response_items[0].job_id


def test_the_server_stores_its_defaults_with_the_job(client: ArmadaClient, queue: str, job_set: str) -> None:
    spec = pod(cpu="100m")
    for quantities in (spec.containers[0].resources.requests, spec.containers[0].resources.limits):
        del quantities["memory"]
    job_id = submit_one(client, queue, job_set, item(spec))
    stored = job_spec(client, job_id).pod_spec
    # post_process.go with config/server/config.yaml
    assert stored.priorityClassName == "armada-default"
    assert stored.activeDeadlineSeconds == 72 * 3600
    assert stored.terminationGracePeriodSeconds == 1
    requests = {name: q.string for name, q in stored.containers[0].resources.requests.items()}
    assert requests == {"cpu": "100m", "memory": "1Gi", "ephemeral-storage": "8Gi"}
    tolerations = {(t.key, t.value, t.effect) for t in stored.tolerations}
    assert {("armadaproject.io/armada", "true", "NoSchedule")} <= tolerations


def test_a_containers_own_resources_and_grace_period_are_kept(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(cpu="200m", memory="128Mi", grace_seconds=20)))
    stored = job_spec(client, job_id).pod_spec
    requests = {name: q.string for name, q in stored.containers[0].resources.requests.items()}
    assert (requests["cpu"], requests["memory"]) == ("200m", "128Mi")
    assert stored.terminationGracePeriodSeconds == 20


@pytest.mark.parametrize("asked, stored", [(2.6, 3), (2.5, 3), (-4.0, 0), (float("nan"), 0), (float("inf"), 2**32 - 1)])
def test_priorities_are_stored_as_armada_rounds_them(
    client: ArmadaClient, queue: str, job_set: str, asked: float, stored: int
) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(), priority=asked))
    assert job_spec(client, job_id).priority == stored  # PriorityAsInt32, submit/conversion/conversions.go


def test_preempting_answers_every_id_and_preempts_only_preemptible_jobs(
    client: ArmadaClient, queue: str, job_set: str
) -> None:
    steady = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    yielding = submit_one(client, queue, job_set, item(preemptible(sleeper(cpu="100m"))))
    wait_for_state(client, steady, RUNNING)
    wait_for_state(client, yielding, RUNNING)
    request = submit_pb2.JobPreemptRequest(queue=queue, job_set_id=job_set, job_ids=[steady, yielding, "nope"])
    answer = client.submit_stub.PreemptJobs(request)
    assert dict(answer.preemption_results) == {steady: "", yielding: "", "nope": ""}  # PreemptJobs, submit.go
    wait_for_state(client, yielding, PREEMPTED)
    assert state_of(client, steady) == RUNNING  # scheduler.go preempts only a preemptible priority class


def test_a_preempted_job_ends_preempting_preempted_failed(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(preemptible(sleeper(cpu="100m"))))
    wait_for_state(client, job_id, RUNNING)
    client.preempt_jobs(queue, job_set, job_id)
    wait_for_state(client, job_id, PREEMPTED)
    events = events_of(client, queue, job_set, job_id, "failed")
    assert [kind(m) for m in events][-3:] == ["preempting", "preempted", "failed"]
    preempted, failed = events[-2].message.preempted, events[-1].message.failed
    # createEventsForPreemptedJob (scheduler.go): no cluster, Armada's default reason on both events
    assert preempted.cluster_id == "" and preempted.run_id
    assert preempted.reason == failed.reason == "Preempted - preemption requested via API"


def test_reprioritizing_a_job_set_gives_one_result_and_only_reprioritized_events(
    client: ArmadaClient, queue: str, job_set: str
) -> None:
    job_id = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    # Real Armada's scheduler emits `reprioritized` for a job it already holds; a reprioritize ingested with the
    # submit only sets the new priority. Wait until the job runs, so the event is due on any Armada.
    wait_for_state(client, job_id, RUNNING)
    answer = client.reprioritize_jobs(new_priority=4.4, job_ids=[], job_set_id=job_set, queue=queue)
    assert dict(answer.reprioritization_results) == {f"all jobs in job set {job_set}": ""}  # submit.go
    events = events_of(client, queue, job_set, job_id, "reprioritized")
    assert "reprioritizing" not in [kind(m) for m in events]
    assert [m.message.reprioritized.new_priority for m in events if kind(m) == "reprioritized"] == [4.0]


def test_reprioritizing_jobs_answers_each_id(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    # Real Armada's scheduler emits `reprioritized` for a job it already holds; a reprioritize ingested with the
    # submit only sets the new priority. Wait until the job runs, so the event is due on any Armada.
    wait_for_state(client, job_id, RUNNING)
    answer = client.reprioritize_jobs(new_priority=2.0, job_ids=[job_id, "nope"], job_set_id=job_set, queue=queue)
    assert dict(answer.reprioritization_results) == {job_id: "", "nope": ""}
    kinds = wait_until(lambda: (k := event_kinds(client, queue, job_set, job_id)) and "reprioritized" in k and k)
    assert [k for k in kinds if k.startswith("reprioritiz")] == ["reprioritizing", "reprioritized"]


@pytest.mark.parametrize("call", ["preempt", "reprioritize"])
def test_acting_in_an_unknown_queue_is_unknown(client: ArmadaClient, call: str) -> None:
    missing = unique("nowhere")
    with pytest.raises(grpc.RpcError) as error:
        if call == "preempt":
            client.preempt_jobs(missing, "js", "x")
        else:
            client.reprioritize_jobs(new_priority=1.0, job_ids=["x"], job_set_id="js", queue=missing)
    assert error.value.code() == grpc.StatusCode.UNKNOWN  # `authorize` in submit.go returns it unwrapped
    assert f'could not find queue "{missing}"' in error.value.details()


def test_a_client_id_twice_in_one_request_makes_two_jobs(client: ArmadaClient, queue: str, job_set: str) -> None:
    client_id = unique("twice")
    first, second = client.submit_jobs(
        queue, job_set, [item(pod(), client_id=client_id), item(pod(), client_id=client_id)]
    ).job_response_items
    assert first.job_id != second.job_id  # the deduplicator only knows ids stored by earlier requests
    again = client.submit_jobs(queue, job_set, [item(pod(), client_id=client_id)]).job_response_items[0]
    assert again.job_id in (first.job_id, second.job_id)


def test_active_queues_name_the_queue_of_a_running_job(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(sleeper(cpu="100m")))
    wait_for_state(client, job_id, RUNNING)
    answer = client.job_stub.GetActiveQueues(job_pb2.GetActiveQueuesRequest())
    assert any(queue in active.queues for active in answer.active_queues_by_pool.values())


@pytest.mark.embedded_only
def test_the_deployments_default_priority_class_is_stored_with_the_job(own_armada) -> None:
    _, client = own_armada(default_priority_class="armada-preemptible")
    job_id = submit_one(client, "conformance", "js", item(pod()))
    assert job_spec(client, job_id).pod_spec.priorityClassName == "armada-preemptible"
