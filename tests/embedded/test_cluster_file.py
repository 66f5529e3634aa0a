"""The cluster file: node sets of identical nodes, validated with errors that name the field and the fix."""

from __future__ import annotations

import pytest
import yaml

from armada_flyte.cluster.cluster_file import DEFAULT_CLUSTER_FILE, Cluster
from armada_flyte.errors import InvalidConfig
from armada_flyte.pod_runner.pod_fence import PodFence

pytestmark = pytest.mark.pure


def group(**overrides) -> dict:
    base = {
        "name": "amd64",
        "nodes": 1,
        "labels": {"kubernetes.io/arch": "amd64"},
        "allocatable": {"cpu": "4", "memory": "16Gi"},
    }
    return {**base, **overrides}


def test_default_cluster_has_an_amd64_node_set_and_a_tainted_arm64_node_set() -> None:
    cluster = Cluster.default()
    assert [(g.name, g.nodes, g.architecture) for g in cluster.node_sets] == [
        ("amd64", 2, "amd64"),
        ("arm64", 2, "arm64"),
    ]
    assert [str(t) for t in cluster.node_set("arm64").taints] == ["kubernetes.io/arch=arm64:NoSchedule"]
    assert cluster.node_set("amd64").taints == []


def test_nodes_are_named_after_their_node_set_and_carry_their_hostname() -> None:
    cluster = Cluster.default()
    assert [n.name for n in cluster.nodes] == ["amd64-0", "amd64-1", "arm64-0", "arm64-1"]
    assert cluster.nodes[3].labels["kubernetes.io/hostname"] == "arm64-1"
    assert cluster.nodes[3].labels["kubernetes.io/arch"] == "arm64"


def test_allocatable_is_kept_in_thousandths_with_a_disk_where_the_file_names_none() -> None:
    node = Cluster.default().nodes[0]
    # every Kubernetes node reports ephemeral-storage, and Armada gives each container 8Gi of it
    disk = 2**40 * 1000
    assert node.allocatable == {"cpu": 4000, "memory": 16 * 2**30 * 1000, "ephemeral-storage": disk}


def test_default_file_is_plain_yaml() -> None:
    assert "node_sets" in yaml.safe_load(DEFAULT_CLUSTER_FILE.read_text())


@pytest.mark.parametrize(
    ("groups", "field", "fix"),
    [
        ([], "(top level)", "list at least one node set"),
        ([group(nodes=0)], "node_sets.0.nodes", "at least 1 node"),
        ([group(labels={})], "node_sets.0.labels", "add the label kubernetes.io/arch"),
        ([group(allocatable={"cpu": "4"})], "node_sets.0.allocatable", "add allocatable memory"),
        (
            [group(allocatable={"cpu": "lots", "memory": "1Gi"})],
            "node_sets.0.allocatable.cpu",
            "not a Kubernetes quantity",
        ),
        ([group(allocatable={"cpu": "4", "memory": "1e5000"})], "node_sets.0.allocatable.memory", "2^63-1"),
        ([group(allocatable={"cpu": True, "memory": "1Gi"})], "node_sets.0.allocatable.cpu", "not a quantity"),
        ([group(name="Big_Nodes")], "node_sets.0.name", "lower-case"),
        ([group(), group()], "(top level)", "unique"),
        ([group(taints=[{"key": "k", "effect": "Sometimes"}])], "node_sets.0.taints.0.effect", "NoSchedule"),
        ([group(colour="blue")], "node_sets.0.colour", "remove this unknown field"),
        (
            [{"name": "a", "labels": {"kubernetes.io/arch": "amd64"}, "allocatable": {"cpu": 1, "memory": "1Gi"}}],
            "node_sets.0.nodes",
            "add the field 'nodes'",
        ),
    ],
)
def test_mistakes_name_the_field_and_the_fix(groups: list, field: str, fix: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        Cluster.from_mapping({"node_sets": groups}, "my-cluster.yaml")
    assert error.value.field == f"my-cluster.yaml: {field}"
    assert fix in error.value.fix


def test_the_old_key_node_groups_still_reads_as_node_sets() -> None:
    cluster = Cluster.from_mapping({"node_groups": [group(name="old", nodes=2)]}, "old-cluster.yaml")
    assert [(s.name, s.nodes) for s in cluster.node_sets] == [("old", 2)]
    assert [n.name for n in cluster.nodes] == ["old-0", "old-1"]


def test_giving_both_node_sets_and_the_old_node_groups_is_a_mistake() -> None:
    with pytest.raises(InvalidConfig) as error:
        Cluster.from_mapping({"node_sets": [group()], "node_groups": [group(name="b")]}, "my-cluster.yaml")
    assert error.value.field == "my-cluster.yaml: node_groups"


def test_a_missing_file_says_so(tmp_path) -> None:
    with pytest.raises(InvalidConfig, match="does not exist"):
        Cluster.from_yaml(tmp_path / "nope.yaml")


def test_describe_gives_one_line_per_node_set() -> None:
    line = Cluster.default().node_set("arm64").describe()
    assert line.startswith("arm64: 2 nodes (cpu 4, memory 8Gi each)")
    assert "taints kubernetes.io/arch=arm64:NoSchedule" in line


def test_pod_limits_and_uids_default_when_the_file_names_none() -> None:
    assert Cluster.default().pod_fence == PodFence()
    assert (PodFence().pids_limit, PodFence().file_size_limit, PodFence().uid_base) == (1024, 8 << 30, 0x70000000)


def test_pod_limits_and_uids_come_from_the_file() -> None:
    data = {
        "podPidsLimit": 64,
        "podFileSizeLimit": "1Mi",
        "podUidBase": 300000,
        "podUidCount": 1000,
        "node_sets": [group()],
    }
    assert Cluster.from_mapping(data).pod_fence == PodFence(64, 1 << 20, 300000, 1000)


@pytest.mark.parametrize(
    ("settings", "field", "fix"),
    [
        ({"podPidsLimit": 0}, "podPidsLimit", "greater than or equal to 1"),
        ({"podFileSizeLimit": "0"}, "podFileSizeLimit", "at least 1 byte"),
        ({"podFileSizeLimit": "big"}, "podFileSizeLimit", "not a Kubernetes quantity"),
        ({"podUidBase": 0}, "podUidBase", "greater than or equal to 1000"),
        ({"podUidBase": 2**31 - 10}, "podUidCount", "must stay at most 2147483647"),
    ],
)
def test_pod_limit_mistakes_name_the_field_and_the_fix(settings: dict, field: str, fix: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        Cluster.from_mapping({**settings, "node_sets": [group()]}, "my-cluster.yaml")
    assert error.value.field == f"my-cluster.yaml: {field}"
    assert fix in error.value.fix
