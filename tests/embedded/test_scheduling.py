"""Node matching and rejection on the default cluster: taints, node selectors, affinity, resources.

Armada checks "can this ever be scheduled" after submit; a job no node can take becomes
REJECTED and GetJobErrors says why, per reason, with how many nodes it excluded.
"""

from __future__ import annotations

import pytest
from armada_client.armada import job_pb2, submit_pb2
from armada_client.client import ArmadaClient

from support.pods import ARCH, ARM64_TOLERATION, arm64_pod, item, pod, required_affinity, submit_one
from support.waiting import job_error, wait_for_state

REJECTED, SUCCEEDED = submit_pb2.REJECTED, submit_pb2.SUCCEEDED
TAINT_NOT_TOLERATED = "taint kubernetes.io/arch=arm64:NoSchedule not tolerated"
ARCH_MISMATCH = "node does not match pod NodeSelector: required label kubernetes.io/arch = arm64, but node has amd64"


def rejection(client: ArmadaClient, queue: str, job_set: str, spec) -> str:
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, REJECTED)
    return job_error(client, job_id)


def test_arm64_job_without_toleration_is_rejected_with_the_taint_reason(
    client: ArmadaClient, queue: str, job_set: str
) -> None:
    reason = rejection(client, queue, job_set, pod(node_selector={ARCH: "arm64"}))
    assert TAINT_NOT_TOLERATED in reason
    assert ARCH_MISMATCH in reason


@pytest.mark.embedded_only
def test_rejection_reads_like_armadas_report(client: ArmadaClient, queue: str, job_set: str) -> None:
    reason = rejection(client, queue, job_set, pod(node_selector={ARCH: "arm64"}))
    assert reason.splitlines() == [
        "pool default:",
        "Node: none",
        "Number of nodes in cluster: 4",
        "Excluded nodes:",
        f"\t2:\t{ARCH_MISMATCH} (node group amd64)",
        f"\t2:\t{TAINT_NOT_TOLERATED} (node group arm64)",
        "---",
    ]


def test_arm64_job_with_toleration_runs(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(arm64_pod()))
    wait_for_state(client, job_id, SUCCEEDED)


@pytest.mark.embedded_only
def test_arm64_job_with_toleration_runs_on_an_arm64_node(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(arm64_pod()))
    wait_for_state(client, job_id, SUCCEEDED)
    assert client.get_job_details([job_id]).job_details[job_id].job_runs[0].node.startswith("arm64-")


def test_selector_on_a_label_no_node_has_is_rejected(client: ArmadaClient, queue: str, job_set: str) -> None:
    reason = rejection(
        client, queue, job_set, pod(node_selector={"example.com/gpu": "a100"}, tolerations=[ARM64_TOLERATION])
    )
    assert "node does not match pod NodeSelector: label example.com/gpu not set" in reason


def test_more_cpu_than_any_node_has_is_rejected(client: ArmadaClient, queue: str, job_set: str) -> None:
    reason = rejection(client, queue, job_set, pod(cpu="8", tolerations=[ARM64_TOLERATION]))
    assert "pod requires 8 cpu, but only 4 is available" in reason


def test_more_memory_than_any_node_has_is_rejected(client: ArmadaClient, queue: str, job_set: str) -> None:
    reason = rejection(client, queue, job_set, pod(memory="64Gi", tolerations=[ARM64_TOLERATION]))
    assert "pod requires 64Gi memory, but only 16Gi is available" in reason


def test_taints_are_checked_before_selectors(client: ArmadaClient, queue: str, job_set: str) -> None:
    reason = rejection(client, queue, job_set, pod(node_selector={"example.com/gpu": "a100"}))
    assert TAINT_NOT_TOLERATED in reason


def test_required_affinity_that_no_node_meets_is_rejected(client: ArmadaClient, queue: str, job_set: str) -> None:
    affinity = required_affinity(ARCH, "In", ["riscv64"])
    reason = rejection(client, queue, job_set, pod(affinity=affinity, tolerations=[ARM64_TOLERATION]))
    assert "node does not match pod NodeAffinity" in reason


@pytest.mark.embedded_only
@pytest.mark.parametrize(
    ("operator", "values", "group"),
    [("In", ["arm64"], "arm64"), ("NotIn", ["amd64"], "arm64"), ("Exists", [], "amd64"), ("DoesNotExist", [], "amd64")],
)
def test_required_affinity_places_the_job(
    client: ArmadaClient, queue: str, job_set: str, operator: str, values: list[str], group: str
) -> None:
    key = ARCH if operator != "DoesNotExist" else "example.com/gpu"
    spec = pod(affinity=required_affinity(key, operator, values), tolerations=[ARM64_TOLERATION])
    spec.nodeSelector[ARCH] = group
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, SUCCEEDED)
    run = client.get_job_details([job_id]).job_details[job_id].job_runs[0]
    assert run.node.startswith(f"{group}-") and run.state == job_pb2.RUN_STATE_SUCCEEDED
