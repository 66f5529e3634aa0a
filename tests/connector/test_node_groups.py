import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from armada_flyte import Architecture, ArchitectureNotOffered, InvalidConfig
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.kube import MAX_INT64
from armada_flyte.kube_objects import Taint, Toleration

from support.hostile_values import MAX_MESSAGE, awkward_numbers, awkward_text

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


_PLACES = {
    "architectures.amd64": lambda groups: groups.architectures[Architecture.parse("amd64")],
    "accelerators.nvidia-l4": lambda groups: groups.accelerators["nvidia-l4"],
    "interruptible": lambda groups: groups.interruptible,
}
"""Where a node-group file spells out constraints, and how to find them once loaded."""


def _file_with(where: str, constraints: dict) -> dict:
    document: dict = {"architectures": {"amd64": {}}}
    section, _, name = where.partition(".")
    if name:
        document.setdefault(section, {})[name] = constraints
    else:
        document[section] = constraints
    return document


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.integers(), awkward_numbers, awkward_text), st.sampled_from(sorted(_PLACES)))
def test_toleration_seconds_load_as_an_int64_or_are_refused_with_the_limit(seconds, where):
    toleration = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
    try:
        groups = NodeGroups.from_mapping(_file_with(where, {"tolerations": [toleration]}), "groups.yaml")
    except InvalidConfig as exc:
        assert exc.field.startswith(f"groups.yaml: {where}.tolerations.0") and len(str(exc)) < MAX_MESSAGE
        if type(seconds) is int:
            limit = MAX_INT64 if seconds > 0 else -MAX_INT64 - 1
            assert not -MAX_INT64 - 1 <= seconds <= MAX_INT64 and str(limit) in str(exc)
    else:
        loaded = _PLACES[where](groups).tolerations[0].to_k8s()["tolerationSeconds"]
        assert -MAX_INT64 - 1 <= loaded <= MAX_INT64
        if type(seconds) is int:
            assert loaded == seconds


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(st.integers().map(str), st.integers(-(2**70), 2**70).map(str), awkward_text),
    st.sampled_from(["Gt", "Lt"]),
    st.sampled_from(sorted(_PLACES)),
)
def test_a_gt_or_lt_affinity_value_loads_as_an_int64_or_is_refused_with_the_limit(value, operator, where):
    expression = {"key": "node.example.com/generation", "operator": operator, "values": [value]}
    try:
        groups = NodeGroups.from_mapping(_file_with(where, {"required_node_affinity": [expression]}), "groups.yaml")
    except InvalidConfig as exc:
        assert exc.field.startswith(f"groups.yaml: {where}.required_node_affinity.0") and len(str(exc)) < MAX_MESSAGE
        assert not value.lstrip("+-").isascii() or not value.lstrip("+-").isdigit() or str(MAX_INT64) in str(exc)
    else:
        loaded = _PLACES[where](groups).required_node_affinity[0].values[0]
        assert loaded == value and -MAX_INT64 - 1 <= int(value) <= MAX_INT64
