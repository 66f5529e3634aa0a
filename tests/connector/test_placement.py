import pytest

from armada_flyte import Architecture, ArchitectureConflict, ArchitectureNotOffered
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.submit.placement import placement_for, resolve_architecture

pytestmark = pytest.mark.pure

ARM_TOLERATION = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}


def place(arch, preset="gke", pod=None, source="task"):
    groups = NodeGroups.preset(preset)
    resolved = resolve_architecture(Architecture.parse(arch) if arch else None, source, groups, pod)
    return resolved, placement_for(resolved, groups, pod)


def test_arm64_on_gke_gets_selector_and_toleration():
    _, placement = place("arm64")
    assert placement.node_selector == {"kubernetes.io/arch": "arm64"}
    assert placement.tolerations == [ARM_TOLERATION]
    assert placement.node_group == "gke-arm"


def test_arm64_on_eks_pins_the_karpenter_pool_too():
    _, placement = place("arm64", "eks-karpenter")
    assert placement.node_selector == {"kubernetes.io/arch": "arm64", "karpenter.sh/nodepool": "graviton-pool"}
    assert placement.tolerations == [ARM_TOLERATION]
    assert placement.node_group == "graviton-pool"


def test_aks_adds_required_affinity_and_no_toleration():
    _, placement = place("arm64", "aks")
    assert placement.tolerations == []
    terms = placement.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.azure.com/mode", "operator": "NotIn", "values": ["system"]}]}
    ]


def test_task_value_beats_platform_default():
    resolved, placement = place("arm64")
    assert (resolved.architecture, resolved.source) == (Architecture.arm64, "task")


def test_platform_default_applies_when_task_has_none():
    resolved, placement = place(None)
    assert (resolved.architecture, resolved.source) == (Architecture.amd64, "platform")
    assert placement.node_selector == {"kubernetes.io/arch": "amd64"}


def test_no_architecture_anywhere_adds_no_constraint():
    resolved, placement = place(None, "generic", pod={"nodeSelector": {"disk": "ssd"}})
    assert resolved.architecture is None and resolved.source == "none"
    assert placement.node_selector == {"disk": "ssd"}
    assert placement.tolerations == [] and placement.affinity is None


def test_project_source_is_kept():
    resolved, _ = place("arm64", source="project")
    assert resolved.source == "project"


def test_pod_template_pin_beats_platform_default():
    resolved, placement = place(None, pod={"nodeSelector": {"kubernetes.io/arch": "arm64"}})
    assert (resolved.architecture, resolved.source) == (Architecture.arm64, "pod_template")
    assert placement.tolerations == [ARM_TOLERATION]


def test_pod_template_pinning_the_other_arch_is_a_conflict():
    with pytest.raises(ArchitectureConflict) as info:
        place("arm64", pod={"nodeSelector": {"kubernetes.io/arch": "amd64"}})
    assert "kubernetes.io/arch=amd64" in str(info.value)
    assert "Remove" in str(info.value)


def test_pod_template_affinity_on_the_other_arch_is_a_conflict():
    pod = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
                    ]
                }
            }
        }
    }
    with pytest.raises(ArchitectureConflict, match="node affinity"):
        place("arm64", pod=pod)


def test_pod_template_constraints_are_kept_and_merged():
    pod = {
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "gpu", "operator": "Exists"}, ARM_TOLERATION],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                }
            }
        },
    }
    _, placement = place("arm64", pod=pod)
    assert placement.node_selector == {"disk": "ssd", "kubernetes.io/arch": "arm64"}
    assert placement.tolerations == [{"key": "gpu", "operator": "Exists"}, ARM_TOLERATION]  # no duplicate
    assert placement.affinity == pod["affinity"]


def test_architecture_not_offered_names_the_source():
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}})
    resolved = resolve_architecture(Architecture.arm64, "project", groups)
    with pytest.raises(ArchitectureNotOffered) as info:
        placement_for(resolved, groups)
    assert "set by project" in str(info.value)
    assert "offered: amd64" in str(info.value)


def test_apply_to_replaces_constraints_in_a_copy():
    _, placement = place("arm64")
    pod = {"containers": [], "nodeSelector": {"kubernetes.io/arch": "arm64"}}
    out = placement.apply_to(pod)
    assert out["tolerations"] == [ARM_TOLERATION]
    assert "tolerations" not in pod
