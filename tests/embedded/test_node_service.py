"""Armada's Node service, CancelOnNode and PreemptOnNode, over a real gRPC socket.

What real Armada does (v0.22.7): the API server checks the node name and executor and publishes
a control-plane event (internal/server/node/node.go); the scheduler ingester then selects the
jobs with a live run on that node of that executor whose queue is among `queues`
(SelectJobsByNodeAndExecutorAndQueues in internal/scheduler/database/query/query.sql, so no
queues selects nothing), keeps those of `priorityClasses` if any are given, and marks them
cancel-requested or preempt-requested (internal/scheduleringester/schedulerdb.go CancelNode,
PreemptNode). Cancelled jobs get only a `cancelled` event; preempted ones `preempted` then
`failed`, and only preemptible jobs are preempted. The nodes and executor are those of a cluster
file of the test's own, so these tests need the embedded server.
"""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import submit_pb2

from armada_flyte.protos import node_pb2, node_pb2_grpc

from support.job_events import event_kinds, job_set_events, kind
from support.pods import cluster, item, node_set, preemptible, sleeper, submit_one
from support.waiting import state_of, wait_for_a_scheduling_pass, wait_for_state

pytestmark = pytest.mark.embedded_only

EXECUTOR = "ops-cluster"
HOSTNAME = "kubernetes.io/hostname"
OTHER_QUEUE = "other-queue"


@pytest.fixture
def armada(own_armada):
    spec = cluster(node_set("ops", cpu="4"), node_set("spare", cpu="4"))
    spec["executor"] = EXECUTOR
    server, client = own_armada(spec)
    server.create_queue(OTHER_QUEUE)
    channel = grpc.insecure_channel(server.url)
    yield server, client, node_pb2_grpc.NodeStub(channel)
    channel.close()


def _running_on(client, queue: str, job_set: str, node: str, spec=None) -> str:
    pod = spec if spec is not None else sleeper(cpu="100m", node_selector={HOSTNAME: node})
    job_id = submit_one(client, queue, job_set, item(pod))
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    return job_id


def test_cancel_on_node_cancels_the_named_queues_jobs_on_that_node_only(armada, queue):
    server, client, nodes = armada
    on_node = _running_on(client, queue, "s", "ops-0")
    elsewhere = _running_on(client, queue, "s", "spare-0")
    other_queue = _running_on(client, OTHER_QUEUE, "s", "ops-0")

    nodes.CancelOnNode(node_pb2.NodeCancelRequest(name="ops-0", executor=EXECUTOR, queues=[queue]))

    wait_for_state(client, on_node, submit_pb2.CANCELLED)
    assert state_of(client, elsewhere) == submit_pb2.RUNNING
    assert state_of(client, other_queue) == submit_pb2.RUNNING
    # the scheduler cancels a cancel-requested job with no `cancelling` event first
    assert event_kinds(client, queue, "s", on_node)[-1] == "cancelled"
    assert "cancelling" not in event_kinds(client, queue, "s", on_node)
    assert client.get_job_details([on_node]).job_details[on_node].cancel_reason == "cancelled by CancelOnNode"


def test_cancel_on_node_keeps_only_the_priority_classes_asked_for(armada, queue):
    server, client, nodes = armada
    default = _running_on(client, queue, "s", "ops-0")
    spec = preemptible(sleeper(cpu="100m", node_selector={HOSTNAME: "ops-0"}))
    chosen = _running_on(client, queue, "s", "ops-0", spec)

    nodes.CancelOnNode(
        node_pb2.NodeCancelRequest(
            name="ops-0", executor=EXECUTOR, queues=[queue], priorityClasses=["armada-preemptible"]
        )
    )

    wait_for_state(client, chosen, submit_pb2.CANCELLED)
    assert state_of(client, default) == submit_pb2.RUNNING


def test_no_queues_another_executor_or_an_unknown_node_cancel_nothing(armada, queue):
    server, client, nodes = armada
    job_id = _running_on(client, queue, "s", "ops-0")

    for request in (
        node_pb2.NodeCancelRequest(name="ops-0", executor=EXECUTOR),  # `queue = ANY('{}')` matches no run
        node_pb2.NodeCancelRequest(name="ops-0", executor="another-cluster", queues=[queue]),
        node_pb2.NodeCancelRequest(name="no-such-node", executor=EXECUTOR, queues=[queue]),
    ):
        nodes.CancelOnNode(request)
        nodes.PreemptOnNode(node_pb2.NodePreemptRequest(**_fields(request)))

    assert state_of(client, job_id) == submit_pb2.RUNNING
    assert event_kinds(client, queue, "s", job_id)[-1] == "running"


def test_a_queued_job_is_not_on_any_node(armada, queue):
    server, client, nodes = armada
    server.pause()
    job_id = submit_one(client, queue, "s", item(sleeper(cpu="100m", node_selector={HOSTNAME: "ops-0"})))
    wait_for_state(client, job_id, submit_pb2.LEASED)  # leased: the run names the node already
    # needs all of ops-0, which the first job holds part of: it stays queued
    held = submit_one(client, queue, "s", item(sleeper(cpu="4", node_selector={HOSTNAME: "ops-0"})))
    wait_for_a_scheduling_pass(client, queue, "s")
    assert state_of(client, held) == submit_pb2.QUEUED

    nodes.CancelOnNode(node_pb2.NodeCancelRequest(name="ops-0", executor=EXECUTOR, queues=[queue]))

    wait_for_state(client, job_id, submit_pb2.CANCELLED)
    assert "cancelled" not in event_kinds(client, queue, "s", held)  # (it may be leased now ops-0 is free)
    server.resume()


def test_preempt_on_node_preempts_the_preemptible_jobs_there(armada, queue):
    server, client, nodes = armada
    spec = preemptible(sleeper(cpu="100m", node_selector={HOSTNAME: "ops-0"}))
    chosen = _running_on(client, queue, "s", "ops-0", spec)
    kept = _running_on(client, queue, "s", "ops-0")  # armada-default is not preemptible

    nodes.PreemptOnNode(node_pb2.NodePreemptRequest(name="ops-0", executor=EXECUTOR, queues=[queue]))

    wait_for_state(client, chosen, submit_pb2.PREEMPTED)
    kinds = event_kinds(client, queue, "s", chosen)
    assert kinds[-2:] == ["preempted", "failed"]
    assert "preempting" not in kinds  # no event comes from the request itself
    assert state_of(client, kept) == submit_pb2.RUNNING


def test_leased_events_name_the_cluster_files_executor(armada, queue):
    server, client, nodes = armada
    job_id = _running_on(client, queue, "s", "ops-0")
    leased = next(
        m for m in job_set_events(client, queue, "s") if kind(m) == "leased" and m.message.leased.job_id == job_id
    )
    assert leased.message.leased.cluster_id == EXECUTOR


@pytest.mark.parametrize("method", ["CancelOnNode", "PreemptOnNode"])
@pytest.mark.parametrize(
    ("name", "executor", "missing"), [("", EXECUTOR, "executor name"), ("ops-0", "", "executor id")]
)
def test_a_request_without_node_or_executor_is_a_plain_error(armada, method, name, executor, missing):
    server, client, nodes = armada
    request_type = node_pb2.NodeCancelRequest if method == "CancelOnNode" else node_pb2.NodePreemptRequest
    action = "cancel" if method == "CancelOnNode" else "preempt"
    with pytest.raises(grpc.RpcError) as raised:
        getattr(nodes, method)(request_type(name=name, executor=executor, queues=["q"]))
    # node.go returns fmt.Errorf, which gRPC reports as UNKNOWN (it calls the node "executor name")
    assert raised.value.code() == grpc.StatusCode.UNKNOWN
    assert raised.value.details() == f"must provide non-empty {missing} when determining what to {action}"


def _fields(request: node_pb2.NodeCancelRequest) -> dict:
    return {"name": request.name, "executor": request.executor, "queues": list(request.queues)}
