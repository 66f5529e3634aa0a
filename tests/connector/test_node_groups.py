import pytest

from armada_flyte import Architecture, ArchitectureNotOffered, InvalidConfig
from armada_flyte.connector.node_groups import NodeGroups
from armada_flyte.kube_objects import Taint, Toleration

pytestmark = pytest.mark.pure

PRESETS = ["gke", "eks-karpenter", "aks", "embedded", "generic"]


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_loads_and_tolerates_its_own_taints(name):
    groups = NodeGroups.preset(name)
    assert groups.offered == ["amd64", "arm64"]
    for group in groups.architectures.values():
        assert group.untolerated_taints() == []


def test_gke_preset_tolerates_the_gke_arm_taint():
    arm = NodeGroups.preset("gke").group_for(Architecture.arm64)
    taint = Taint(key="kubernetes.io/arch", value="arm64", effect="NoSchedule")
    assert any(t.tolerates(taint) for t in arm.tolerations)


def test_selector_defaults_to_the_arch_label():
    groups = NodeGroups.from_mapping({"architectures": {"aarch64": {}}})
    group = groups.group_for(Architecture.arm64)
    assert group.node_selector == {"kubernetes.io/arch": "arm64"}
    assert group.node_group == "arm64"


def test_asking_for_an_architecture_not_offered_names_what_is():
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}})
    with pytest.raises(ArchitectureNotOffered) as info:
        groups.group_for(Architecture.arm64)
    assert "offered: amd64" in str(info.value)
    assert "arm64" in str(info.value)


@pytest.mark.parametrize(
    "data, where, hint",
    [
        ({"architectures": {}}, "architectures", "at least one"),
        ({"architectures": {"riscv": {}}}, "architectures.riscv", "arm64"),
        ({"architectures": {"amd64": {"node_selector": {"bad key!": "x"}}}}, "node_selector", "63 characters"),
        ({"architectures": {"amd64": {"node_selector": {"k": "bad value!"}}}}, "node_selector", "value"),
        (
            {"architectures": {"amd64": {"node_selector": {"kubernetes.io/arch": "arm64"}}}},
            "(top level)",
            "must be amd64",
        ),
        (
            {"architectures": {"amd64": {"tolerations": [{"operator": "Equal", "value": "x"}]}}},
            "tolerations",
            "empty key",
        ),
        (
            {"architectures": {"amd64": {"tolerations": [{"key": "k", "operator": "Exists", "value": "x"}]}}},
            "tolerations",
            "Exists takes no value",
        ),
        ({"architectures": {"amd64": {"tolerations": [{"key": "k", "effect": "Sometimes"}]}}}, "effect", "NoSchedule"),
        (
            {"architectures": {"amd64": {"tolerations": [{"key": "k", "tolerationSeconds": 5}]}}},
            "tolerations",
            "NoExecute",
        ),
        (
            {"architectures": {"amd64": {"required_node_affinity": [{"key": "k", "operator": "In"}]}}},
            "required_node_affinity",
            "at least one value",
        ),
        (
            {"architectures": {"amd64": {"required_node_affinity": [{"key": "k", "operator": "Gt", "values": ["x"]}]}}},
            "required_node_affinity",
            "integer",
        ),
        ({"architectures": {"amd64": {"surprise": 1}}}, "surprise", "Extra inputs"),
        ({"default_architecture": "arm64", "architectures": {"amd64": {}}}, "(top level)", "not among"),
    ],
)
def test_bad_node_group_files_name_the_field(data, where, hint):
    with pytest.raises(InvalidConfig) as info:
        NodeGroups.from_mapping(data, "groups.yaml")
    message = str(info.value)
    assert "groups.yaml" in message
    assert where in message
    assert hint in message


def test_yaml_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "none.yaml"
    with pytest.raises(InvalidConfig, match="does not exist"):
        NodeGroups.from_yaml(missing)
    broken = tmp_path / "broken.yaml"
    broken.write_text("architectures: [unclosed")
    with pytest.raises(InvalidConfig, match="not valid YAML"):
        NodeGroups.from_yaml(broken)


def test_unknown_preset_lists_known_ones():
    with pytest.raises(InvalidConfig) as info:
        NodeGroups.preset("openshift")
    assert "gke" in str(info.value) and "eks-karpenter" in str(info.value)


def test_toleration_matching_follows_kubernetes_rules():
    taint = Taint(key="kubernetes.io/arch", value="arm64", effect="NoSchedule")
    assert Toleration(key="kubernetes.io/arch", operator="Exists").tolerates(taint)
    assert Toleration(operator="Exists").tolerates(taint)
    assert not Toleration(key="kubernetes.io/arch", value="amd64").tolerates(taint)
    assert not Toleration(key="kubernetes.io/arch", value="arm64", effect="NoExecute").tolerates(taint)


def test_untolerated_taints_are_reported():
    groups = NodeGroups.from_mapping(
        {
            "architectures": {
                "arm64": {"taints": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]}
            }
        }
    )
    assert [str(t) for t in groups.group_for(Architecture.arm64).untolerated_taints()] == [
        "kubernetes.io/arch=arm64:NoSchedule"
    ]
