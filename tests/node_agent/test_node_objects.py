"""The cluster file's nodes as the node agent registers them: what Armada's executor and kube-scheduler read."""

from __future__ import annotations

import datetime

import pytest

from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.node_agent.node_objects import node_object, node_status

pytestmark = pytest.mark.pure

NOW = datetime.datetime(2026, 12, 7, 10, 0, 0, tzinfo=datetime.timezone.utc)


def node(name: str):
    return next(n for n in Cluster.default().nodes if n.name == name)


def test_a_node_carries_its_groups_labels_its_hostname_and_os():
    labels = node_object(node("arm64-1"))["metadata"]["labels"]
    assert labels["kubernetes.io/arch"] == "arm64"
    assert labels["kubernetes.io/hostname"] == "arm64-1"
    assert labels["kubernetes.io/os"] == "linux"


def test_a_node_has_exactly_its_groups_taints():
    """The spec's list replaces the not-ready taint an admission plugin may have added at creation."""
    assert node_object(node("arm64-0"))["spec"]["taints"] == [
        {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}
    ]
    assert node_object(node("amd64-0"))["spec"]["taints"] is None


def test_the_status_is_ready_with_the_groups_resources_and_the_kubelet_endpoint():
    status = node_status(node("amd64-0"), 24225, NOW, NOW)
    assert status["allocatable"]["cpu"] == "4" and status["allocatable"]["memory"] == "17179869184"
    assert status["allocatable"]["pods"] == "110"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 24225}}
    assert status["addresses"][0] == {"type": "InternalIP", "address": "127.0.0.1"}
    assert status["nodeInfo"]["architecture"] == "amd64"


def test_a_group_that_names_pods_sets_the_nodes_pod_capacity_as_a_kubelets_max_pods():
    group = {"name": "busy", "nodes": 1, "labels": {"kubernetes.io/arch": "amd64"}}
    cluster = Cluster.from_mapping(
        {"node_sets": [{**group, "allocatable": {"cpu": "4", "memory": "1Gi", "pods": "500"}}]}
    )
    assert node_status(cluster.nodes[0], 1, NOW, NOW)["allocatable"]["pods"] == "500"
