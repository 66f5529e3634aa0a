"""`architecture="any"`: the allowed set (platform x image x pod template) and how placement asks Armada
for "any of these" (required node affinity, ORed terms, every group's tolerations)."""

import pytest

from armada_flyte import Architecture, ArchitectureConflict, ArchitectureNotOffered, InvalidConfig, NoCommonArchitecture
from armada_flyte.architecture import ANY
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.submit.accelerators import AcceleratorRequest
from armada_flyte.connector.submit.placement import ImageArchitectures, placement_for, resolve_architecture

pytestmark = pytest.mark.pure

ARM_TOLERATION = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
BOTH = (Architecture.amd64, Architecture.arm64)


def place(preset="embedded", pod=None, images=(), accelerator=None, groups=None):
    groups = groups or NodeGroups.preset(preset)
    resolved = resolve_architecture(ANY, "task", groups, pod, images)
    return resolved, placement_for(resolved, groups, pod, accelerator)


def terms_of(placement):
    return placement.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def test_any_on_the_embedded_platform_allows_both_with_the_arm64_toleration():
    resolved, placement = place()
    assert resolved.any_of == BOTH and resolved.architecture is None and resolved.several
    assert placement.architecture is None and placement.any_of == BOTH
    assert placement.node_selector == {}
    assert terms_of(placement) == [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}
    ]
    assert placement.tolerations == [ARM_TOLERATION]


def test_groups_with_their_own_selectors_become_one_ored_term_each():
    # Armada ORs required node-selector terms as Kubernetes does: it calls Kubernetes' MatchNodeSelectorTerms
    # (internal/scheduler/kubernetesobjects/label/label.go), so one term per group reaches either group.
    _, placement = place("eks-karpenter")
    assert placement.node_selector == {}
    assert terms_of(placement) == [
        {
            "matchExpressions": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x86-pool"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ]
        },
        {
            "matchExpressions": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["graviton-pool"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
            ]
        },
    ]


def test_a_groups_own_affinity_stays_in_its_term_only():
    _, placement = place("aks")
    not_system = {"key": "kubernetes.azure.com/mode", "operator": "NotIn", "values": ["system"]}
    amd64, arm64 = terms_of(placement)
    assert not_system not in amd64["matchExpressions"] and not_system in arm64["matchExpressions"]


def test_pod_template_affinity_is_anded_into_every_term():
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a", "b"]}
    pod = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}
            }
        }
    }
    _, placement = place("eks-karpenter", pod=pod)
    assert len(terms_of(placement)) == 2
    assert all(zone in term["matchExpressions"] for term in terms_of(placement))


def test_an_image_known_for_one_architecture_narrows_any_to_it():
    image = ImageArchitectures("r/app:1", (Architecture.arm64,), "its registry")
    resolved, placement = place(images=[image])
    assert resolved.any_of == (Architecture.arm64,) and resolved.architecture is Architecture.arm64
    assert "r/app:1" in resolved.narrowed_by[0]
    assert placement.node_selector == {"kubernetes.io/arch": "arm64"} and placement.node_group == "arm64"
    assert placement.tolerations == [ARM_TOLERATION] and placement.any_of == ()


def test_the_pod_templates_arch_pin_narrows_any():
    resolved, placement = place(pod={"nodeSelector": {"kubernetes.io/arch": "amd64"}})
    assert resolved.architecture is Architecture.amd64
    assert placement.node_selector == {"kubernetes.io/arch": "amd64"}


def test_empty_intersection_is_the_not_offered_error_naming_both_sets(tmp_path):
    groups = NodeGroups.from_mapping({"architectures": {"arm64": {}}})
    image = ImageArchitectures("r/app:1", (Architecture.amd64,), "its registry, at submission")
    with pytest.raises(ArchitectureNotOffered) as info:
        place(groups=groups, images=[image])
    assert isinstance(info.value, NoCommonArchitecture)
    message = str(info.value)
    assert "'r/app:1' has amd64" in message and "offers arm64" in message and "its registry" in message
    assert "(set by task)" in message


def test_pod_template_excluding_every_allowed_architecture_is_a_conflict():
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}})
    with pytest.raises(ArchitectureConflict, match="allows only arm64"):
        place(groups=groups, pod={"nodeSelector": {"kubernetes.io/arch": "arm64"}})


def test_a_gpu_entrys_selector_replaces_the_groups_same_key_in_every_term():
    request = AcceleratorRequest(count="1", device="nvidia-l4")
    _, placement = place("eks-karpenter", accelerator=request)
    assert placement.node_selector["karpenter.sh/nodepool"] == "gpu-pool"
    assert terms_of(placement) == [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}
    ]


def test_node_names_tell_the_architecture_back():
    groups = NodeGroups.preset("embedded")
    assert groups.architecture_of_node("arm64-1", BOTH) is Architecture.arm64
    assert groups.architecture_of_node("amd64-0", BOTH) is Architecture.amd64
    assert groups.architecture_of_node("ip-10-0-0-1.ec2.internal", BOTH) is None
    gke = NodeGroups.preset("gke")
    assert gke.architecture_of_node("gke-prod-gke-arm-5f2a1c3b-x7q2", BOTH) is Architecture.arm64
    named = NodeGroups.from_mapping(
        {
            "architectures": {
                "amd64": {"node_name_prefixes": ["ip-10-1-"]},
                "arm64": {"node_name_prefixes": ["ip-10-2-"]},
            }
        }
    )
    assert named.architecture_of_node("ip-10-2-3-4.ec2.internal", BOTH) is Architecture.arm64
    with pytest.raises(InvalidConfig, match="prefix"):
        NodeGroups.from_mapping({"architectures": {"amd64": {"node_name_prefixes": [""]}}})
