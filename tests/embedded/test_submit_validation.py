"""SubmitJobs: authorisation, then validation of the whole request, then deduplication, as Armada does it."""

from __future__ import annotations

import re
from typing import Callable

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from support.job_events import job_set_events
from support.pods import gang, item, pod, required_affinity, resources, unique
from support.real_armada import wait_until_queue_accepts


def refusal(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as error:
        call()
    return error.value


def test_unknown_queue_is_permission_denied_naming_the_queue(client: ArmadaClient, job_set: str) -> None:
    missing = unique("nowhere")
    error = refusal(lambda: client.submit_jobs(missing, job_set, [item(pod())]))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert f'could not find queue "{missing}"' in error.details()


def test_empty_queue_is_permission_denied(client: ArmadaClient, job_set: str) -> None:
    error = refusal(lambda: client.submit_jobs("", job_set, [item(pod())]))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert 'could not find queue ""' in error.details()


def test_job_set_id_is_required(client: ArmadaClient, queue: str) -> None:
    error = refusal(lambda: client.submit_jobs(queue, "", [item(pod())]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "job set id is a required field" in error.details()


def _preferred_affinity() -> core.Affinity:
    term = core.NodeSelectorTerm(
        matchExpressions=[core.NodeSelectorRequirement(key="kubernetes.io/arch", operator="In", values=["arm64"])]
    )
    preferred = core.PreferredSchedulingTerm(weight=1, preference=term)
    return core.Affinity(nodeAffinity=core.NodeAffinity(preferredDuringSchedulingIgnoredDuringExecution=[preferred]))


def _two_pod_specs() -> submit_pb2.JobSubmitRequestItem:
    two = item(pod())
    two.pod_specs.append(pod())
    return two


def _pod_spec_and_pod_specs() -> submit_pb2.JobSubmitRequestItem:
    both = item(pod())
    both.pod_spec.CopyFrom(pod())
    return both


INVALID_ITEMS = {
    "limits differ from requests": lambda: item(
        pod(container_resources=resources("1", "1Gi", limits={"cpu": "2", "memory": "1Gi"}))
    ),
    "limits miss a resource": lambda: item(pod(container_resources=resources("1", "1Gi", limits={"cpu": "1"}))),
    "no resources": lambda: item(pod(container_resources=core.ResourceRequirements())),
    "negative cpu": lambda: item(pod(cpu="-1")),
    "memory under 1Mi": lambda: item(pod(memory="512Ki")),
    "no pod spec": lambda: submit_pb2.JobSubmitRequestItem(namespace="default"),
    "two pod specs": _two_pod_specs,
    "pod_spec and pod_specs": _pod_spec_and_pod_specs,
    "no namespace": lambda: item(pod(), namespace=""),
    "client id over 100 chars": lambda: item(pod(), client_id="c" * 101),
    "preferred node affinity": lambda: item(pod(affinity=_preferred_affinity())),
    "grace period over 5 min": lambda: item(pod(grace_seconds=301)),
    "gang without cardinality": lambda: item(pod(), annotations={"armadaproject.io/gangId": "g"}),
    "gang with empty id": lambda: item(pod(), annotations=gang("", 2)),
    "bad affinity operator": lambda: item(pod(affinity=required_affinity("kubernetes.io/arch", "Near", ["arm64"]))),
}

# What each refusal says, as a pattern both Armada's wording and the embedded server's match
# (internal/server/submit/validation/submit_request.go), so a request refused by another rule fails.
INVALID_ITEM_REASONS = {
    "limits differ from requests": r"container main defines cpu with limits",
    "limits miss a resource": r"container main defines different resources for requests and limits",
    "no resources": r"container main has no resources specified",
    "negative cpu": r"negative resource request \(-1\) for resource cpu",
    "memory under 1Mi": r"memory requests? \(512Ki\) (is )?below (the )?server minimum \(1Mi\)",
    "no pod spec": r"(?i)must contain (a|at least one) pod ?spec",
    "two pod specs": r"(?i)jobs with (more than one pod|multiple pods) are not supported",
    "pod_spec and pod_specs": r"(?i)pod_?spec .*pod_?specs",
    "no namespace": r"namespace is a required field",
    "client id over 100 chars": r"client id of length 101 is",
    "preferred node affinity": r"preferredDuringSchedulingIgnoredDuringExecution node affinity is not supported",
    "grace period over 5 min": r"terminationGracePeriodSeconds of 301 must be \[1, 300\]",
    "gang without cardinality": r"invalid gang information: .*armadaproject.io/gangCardinality",
    "gang with empty id": r"invalid gang information: .*(gang id|gangId) is empty",
    "bad affinity operator": r"(?i)invalid requiredDuringSchedulingIgnoredDuringExecution node affinity",
}


@pytest.mark.parametrize("case", sorted(INVALID_ITEMS))
def test_invalid_item_fails_the_whole_request(client: ArmadaClient, queue: str, job_set: str, case: str) -> None:
    valid = item(pod())
    error = refusal(lambda: client.submit_jobs(queue, job_set, [valid, INVALID_ITEMS[case]()]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert re.search(INVALID_ITEM_REASONS[case], error.details()), error.details()
    assert job_set_events(client, queue, job_set) == [], "a refused request creates no job, not even its valid items"


def test_gang_members_must_agree_on_cardinality(client: ArmadaClient, queue: str, job_set: str) -> None:
    items = [item(pod(), annotations=gang("g", 2)), item(pod(), annotations=gang("g", 3))]
    error = refusal(lambda: client.submit_jobs(queue, job_set, items))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert re.search(r"inconsistent (gang )?cardinality in gang g: expected 2 but got 3", error.details())


def test_gang_members_must_agree_on_uniformity_label(client: ArmadaClient, queue: str, job_set: str) -> None:
    items = [item(pod(), annotations=gang("g", 2, "kubernetes.io/arch")), item(pod(), annotations=gang("g", 2))]
    error = refusal(lambda: client.submit_jobs(queue, job_set, items))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert re.search(r"(?i)inconsistent node ?uniformity ?label in gang g", error.details())


@pytest.mark.parametrize("seconds", [0, 1, 300])
def test_grace_period_zero_or_within_limits_is_accepted(
    client: ArmadaClient, queue: str, job_set: str, seconds: int
) -> None:
    response = client.submit_jobs(queue, job_set, [item(pod(grace_seconds=seconds))])
    assert response.job_response_items[0].job_id


def test_required_node_affinity_is_accepted(client: ArmadaClient, queue: str, job_set: str) -> None:
    affinity = required_affinity("kubernetes.io/arch", "In", ["amd64"])
    response = client.submit_jobs(queue, job_set, [item(pod(affinity=affinity))])
    assert response.job_response_items[0].job_id


def _with_priority_class(name: str) -> core.PodSpec:
    spec = pod()
    spec.priorityClassName = name
    return spec


def test_unknown_priority_class_is_refused_naming_it(client: ArmadaClient, queue: str, job_set: str) -> None:
    # Armada's validatePriorityClasses (internal/server/submit/validation/submit_request.go) checks the
    # name against submission.allowedPriorityClassNames; its stock config allows the three below.
    error = refusal(lambda: client.submit_jobs(queue, job_set, [item(_with_priority_class("gold"))]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "priority class gold is not supported" in error.details()


@pytest.mark.parametrize("name", ["armada-default", "armada-preemptible", "armada-resilient"])
def test_stock_priority_classes_are_accepted(client: ArmadaClient, queue: str, job_set: str, name: str) -> None:
    response = client.submit_jobs(queue, job_set, [item(_with_priority_class(name))])
    assert response.job_response_items[0].job_id


def test_resubmitting_a_client_id_returns_the_original_job(client: ArmadaClient, queue: str, job_set: str) -> None:
    client_id = unique("once")
    first = client.submit_jobs(queue, job_set, [item(pod(), client_id=client_id)]).job_response_items[0]
    again = client.submit_jobs(queue, job_set, [item(pod(), client_id=client_id)]).job_response_items[0]
    assert again.job_id == first.job_id
    assert not first.error and not again.error


def test_client_ids_are_per_queue(client: ArmadaClient, queue: str, job_set: str) -> None:
    other = unique("q")
    client.create_queue(client.create_queue_request(other, priority_factor=1.0))
    wait_until_queue_accepts(client, other)
    client_id = unique("once")
    here = client.submit_jobs(queue, job_set, [item(pod(), client_id=client_id)]).job_response_items[0].job_id
    there = client.submit_jobs(other, job_set, [item(pod(), client_id=client_id)]).job_response_items[0].job_id
    client.cancel_jobset(other, job_set, [])
    assert here != there


def test_each_item_gets_its_own_id_in_order(client: ArmadaClient, queue: str, job_set: str) -> None:
    response = client.submit_jobs(queue, job_set, [item(pod()) for _ in range(3)])
    ids = [i.job_id for i in response.job_response_items]
    assert len(set(ids)) == 3
