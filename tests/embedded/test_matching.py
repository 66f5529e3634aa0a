"""Node matching: every reason a pod can't land on a node is a value with Armada's message."""

from __future__ import annotations

import pytest
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.embedded.model.requirements import NodeExpression, Requirements
from armada_flyte.embedded.scheduling.matching import (
    InsufficientResource,
    MissingLabel,
    UnmatchedAffinity,
    UnmatchedLabel,
    UntoleratedTaint,
    rejection_report,
    static_mismatch,
)
from armada_flyte.kube_objects import Taint

from support.pods import ARM64_TOLERATION, pod, required_affinity

pytestmark = pytest.mark.pure

CLUSTER = Cluster.default()
AMD64, ARM64 = CLUSTER.nodes[0], CLUSTER.nodes[2]


def needs(spec: core.PodSpec) -> Requirements:
    return Requirements.of_pod(spec)


def test_an_untolerated_taint_comes_first() -> None:
    mismatch = static_mismatch(ARM64, needs(pod(node_selector={"gpu": "yes"}, cpu="100")))
    assert mismatch == UntoleratedTaint(Taint(key="kubernetes.io/arch", value="arm64", effect="NoSchedule"))
    assert str(mismatch) == "taint kubernetes.io/arch=arm64:NoSchedule not tolerated"


def test_prefer_no_schedule_taints_also_need_a_toleration() -> None:
    soft = Cluster.from_mapping(
        {
            "node_sets": [
                {
                    "name": "a",
                    "nodes": 1,
                    "labels": {"kubernetes.io/arch": "amd64"},
                    "taints": [{"key": "spot", "effect": "PreferNoSchedule"}],
                    "allocatable": {"cpu": 1, "memory": "1Gi"},
                }
            ]
        }
    )
    assert isinstance(static_mismatch(soft.nodes[0], needs(pod())), UntoleratedTaint)


def test_selector_mismatch_names_both_values() -> None:
    mismatch = static_mismatch(AMD64, needs(pod(node_selector={"kubernetes.io/arch": "arm64"})))
    assert mismatch == UnmatchedLabel("kubernetes.io/arch", "arm64", "amd64")
    assert (
        str(mismatch)
        == "node does not match pod NodeSelector: required label kubernetes.io/arch = arm64, but node has amd64"
    )


def test_selector_on_a_missing_label() -> None:
    mismatch = static_mismatch(AMD64, needs(pod(node_selector={"example.com/gpu": "a100"})))
    assert mismatch == MissingLabel("example.com/gpu")
    assert str(mismatch) == "node does not match pod NodeSelector: label example.com/gpu not set"


def test_not_enough_cpu_names_required_and_available() -> None:
    mismatch = static_mismatch(AMD64, needs(pod(cpu="4500m")))
    assert mismatch == InsufficientResource("cpu", 4500, 4000)
    assert str(mismatch) == "pod requires 4500m cpu, but only 4 is available"


def test_affinity_mismatch_shows_the_terms() -> None:
    mismatch = static_mismatch(AMD64, needs(pod(affinity=required_affinity("kubernetes.io/arch", "In", ["arm64"]))))
    assert isinstance(mismatch, UnmatchedAffinity)
    assert str(mismatch) == "node does not match pod NodeAffinity (kubernetes.io/arch In [arm64])"


@pytest.mark.parametrize(
    ("operator", "values", "label_value", "holds"),
    [
        ("In", ("a", "b"), "b", True),
        ("In", ("a",), None, False),
        ("NotIn", ("a",), "b", True),
        ("NotIn", ("a",), None, True),
        ("NotIn", ("a",), "a", False),
        ("Exists", (), "x", True),
        ("Exists", (), None, False),
        ("DoesNotExist", (), None, True),
        ("DoesNotExist", (), "x", False),
        ("Gt", ("3",), "4", True),
        ("Gt", ("3",), "3", False),
        ("Lt", ("3",), "2", True),
        ("Lt", ("3",), "not-a-number", False),
    ],
)
def test_affinity_operators(operator: str, values: tuple, label_value, holds: bool) -> None:
    labels = {} if label_value is None else {"k": label_value}
    assert NodeExpression("k", operator, values).holds(labels, "node-0") is holds


def test_match_fields_select_by_node_name() -> None:
    assert NodeExpression("metadata.name", "In", ("arm64-1",), on_field=True).holds({}, "arm64-1")


def test_an_empty_affinity_term_matches_no_node() -> None:
    assert not Requirements(affinity_terms=((),)).affinity_matches({"k": "v"}, "n")


def test_the_toleration_and_resources_that_fit_match() -> None:
    assert static_mismatch(ARM64, needs(pod(tolerations=[ARM64_TOLERATION], cpu="4", memory="8Gi"))) is None


def test_init_containers_count_by_their_largest_request() -> None:
    spec = pod(cpu="1")
    spec.initContainers.append(core.Container(name="init", resources=spec.containers[0].resources))
    spec.initContainers[0].resources.requests["cpu"].string = "3"
    assert dict(needs(spec).resources)["cpu"] == 3000


def test_no_report_when_some_node_fits() -> None:
    assert rejection_report(CLUSTER, needs(pod())) is None


def test_report_counts_nodes_per_reason_and_names_their_groups() -> None:
    report = rejection_report(CLUSTER, needs(pod(cpu="5", tolerations=[ARM64_TOLERATION])))
    assert report == (
        "pool default:\nNode: none\nNumber of nodes in cluster: 4\nExcluded nodes:\n"
        "\t4:\tpod requires 5 cpu, but only 4 is available (node groups amd64, arm64)\n---"
    )
