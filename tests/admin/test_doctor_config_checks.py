"""The pure config checks: each rule Armada applies to nodes, as a finding with its fix."""

from __future__ import annotations

import copy

import pytest

from armada_flyte.admin.doctor.config_checks import (
    check_executor_config,
    check_fallback,
    check_node_groups,
    check_runtime_platforms,
    check_scheduler_config,
)
from armada_flyte.architecture import Architecture
from armada_flyte.connector.config.node_groups import NodeGroups

pytestmark = pytest.mark.pure


def _problems(findings):
    return [f for f in findings if not f.ok]


def _gke() -> NodeGroups:
    return NodeGroups.preset("gke")


def _about_arch(findings):
    """The problems about the arch label or taint (the GKE preset's GPU entries add their own)."""
    return [f for f in _problems(findings) if "kubernetes.io/arch" in f.message]


def _with(config, **kubernetes):
    changed = copy.deepcopy(config)
    changed["kubernetes"].update(kubernetes)
    return changed


def test_gke_preset_with_the_shipped_armada_settings_has_no_problems(good_executor, good_scheduler):
    groups = _gke()
    findings = [
        *check_node_groups(groups),
        *check_executor_config(groups, good_executor),
        *check_scheduler_config(good_scheduler),
        *check_runtime_platforms(groups, [Architecture.amd64, Architecture.arm64]),
    ]
    assert findings and not _problems(findings)


def test_untracked_arch_label_means_every_arch_pinned_job_is_rejected(good_executor):
    findings = check_executor_config(_gke(), _with(good_executor, trackedNodeLabels=["kubernetes.io/hostname"]))
    [bad] = _about_arch(findings)
    assert bad.check == "executor.tracked-labels"
    assert 'every arch-pinned job is REJECTED with "label kubernetes.io/arch not set"' in bad.message
    assert "add kubernetes.io/arch to kubernetes.trackedNodeLabels" in bad.fix
    assert "keep kubernetes.io/hostname" in bad.fix


def test_unset_tracked_labels_falls_back_to_armadas_default_of_hostname_only():
    config = {"kubernetes": {"toleratedTaints": ["kubernetes.io/arch"]}}
    [bad] = _about_arch(check_executor_config(_gke(), config))
    assert "not set, so only the default kubernetes.io/hostname" in bad.message
    assert "REJECTED" in bad.message


def test_tracked_labels_at_the_top_level_are_reported_as_misplaced():
    config = {"trackedNodeLabels": ["kubernetes.io/arch"], "kubernetes": {"toleratedTaints": ["kubernetes.io/arch"]}}
    [bad] = _about_arch(check_executor_config(_gke(), config))
    assert "trackedNodeLabels is at the top level of the file; Armada reads it only under kubernetes:" in bad.message


def test_extra_selector_label_untracked_rejects_that_groups_jobs(good_executor):
    groups = NodeGroups.preset("eks-karpenter")
    [bad] = _problems(check_executor_config(groups, good_executor))
    assert bad.check == "executor.tracked-labels"
    assert bad.message.startswith("karpenter.sh/nodepool (used by the node selector of accelerator nvidia-a100-80gb")
    assert "node group graviton-pool (arm64), node group x86-pool (amd64))" in bad.message
    assert 'REJECTED with "label karpenter.sh/nodepool not set"' in bad.message
    assert "add karpenter.sh/nodepool to kubernetes.trackedNodeLabels" in bad.fix


def test_untracked_not_in_affinity_label_leaves_pods_pending_rather_than_rejected(good_executor):
    groups = NodeGroups.preset("aks")
    [bad] = _problems(check_executor_config(groups, good_executor))
    assert "kubernetes.azure.com/mode" in bad.message
    assert "node affinity kubernetes.azure.com/mode NotIn" in bad.message
    assert "Kubernetes leaves the pod Pending" in bad.message
    assert "REJECTED" not in bad.message


def test_arch_taint_not_tolerated_by_the_executor_means_jobs_queue_forever(good_executor):
    findings = check_executor_config(_gke(), _with(good_executor, toleratedTaints=["nvidia.com/gpu"]))
    [bad] = _problems(findings)
    assert bad.check == "executor.tolerated-taints"
    assert "node group gke-arm (arm64): its nodes carry taint kubernetes.io/arch=arm64:NoSchedule" in bad.message
    assert "stay QUEUED forever" in bad.message
    assert "add kubernetes.io/arch to kubernetes.toleratedTaints" in bad.fix


def test_only_no_schedule_taints_need_the_executors_toleration(good_executor):
    groups = NodeGroups.from_mapping(
        {
            "architectures": {
                "arm64": {
                    "tolerations": [{"key": "spot", "operator": "Exists"}],
                    "taints": [
                        {"key": "spot", "value": "true", "effect": "NoExecute"},
                        {"key": "spot", "effect": "PreferNoSchedule"},
                    ],
                }
            }
        }
    )
    findings = check_executor_config(groups, _with(good_executor, toleratedTaints=[]))
    assert not _problems(findings)
    assert any(f.message == "no node group declares a NoSchedule taint" for f in findings)


def test_helm_values_of_the_executor_chart_are_read_under_application_config(good_executor):
    assert not _problems(check_executor_config(_gke(), {"applicationConfig": good_executor}))
    assert _problems(check_executor_config(_gke(), {"applicationConfig": {"kubernetes": {}}}))


def test_uniformity_label_not_indexed_leaves_gangs_unschedulable():
    [bad] = check_scheduler_config({"scheduling": {"indexedNodeLabels": ["kubernetes.io/hostname"]}})
    assert bad.check == "scheduler.indexed-labels" and not bad.ok
    assert '"uniformity label kubernetes.io/arch is not indexed"' in bad.message
    assert "add kubernetes.io/arch to scheduling.indexedNodeLabels" in bad.fix


def test_indexed_labels_outside_scheduling_are_reported_as_misplaced():
    [bad] = check_scheduler_config({"indexedNodeLabels": ["kubernetes.io/arch"]})
    assert "indexedNodeLabels is at the top level of the file; Armada reads it only under scheduling:" in bad.message


def test_scheduler_helm_values_are_read_under_scheduler_application_config(good_scheduler):
    [good] = check_scheduler_config({"scheduler": {"applicationConfig": good_scheduler}})
    assert good.ok


def test_node_group_whose_tolerations_miss_its_own_taint_is_a_problem_with_the_toleration_to_add():
    groups = NodeGroups.from_mapping(
        {
            "architectures": {
                "arm64": {
                    "node_group": "arm",
                    "taints": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}],
                }
            }
        }
    )
    [bad] = check_node_groups(groups)
    assert bad.check == "node-groups.tolerations" and not bad.ok
    assert bad.message == (
        "node group arm (arm64): its nodes carry taint kubernetes.io/arch=arm64:NoSchedule, but its tolerations "
        'don\'t cover it, so every arm64 job is REJECTED with "taint kubernetes.io/arch=arm64:NoSchedule not tolerated"'
    )
    assert "{key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}" in bad.fix


def test_a_taint_without_value_is_fixed_with_an_exists_toleration():
    groups = NodeGroups.from_mapping(
        {"architectures": {"arm64": {"taints": [{"key": "dedicated", "effect": "NoExecute"}]}}}
    )
    [bad] = check_node_groups(groups)
    assert "{key: dedicated, operator: Exists, effect: NoExecute}" in bad.fix


def test_an_exists_toleration_covers_the_taint():
    groups = NodeGroups.from_mapping(
        {
            "architectures": {
                "arm64": {
                    "tolerations": [{"key": "kubernetes.io/arch", "operator": "Exists"}],
                    "taints": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}],
                }
            }
        }
    )
    [good] = check_node_groups(groups)
    assert good.ok and "tolerates its taints" in good.message


def test_preset_offering_an_architecture_the_runtime_image_lacks():
    findings = check_runtime_platforms(_gke(), [Architecture.amd64])
    [bad] = _problems(findings)
    assert bad.check == "runtime-image.platforms"
    assert bad.message == (
        "node group gke-arm (arm64) offers arm64, but the runtime image is built only for linux/amd64: "
        'tasks placed there fail with "exec format error"'
    )
    assert "--platform linux/amd64,linux/arm64" in bad.fix
    assert "or remove arm64 from the node-group file" in bad.fix


def test_findings_are_plain_values_with_check_ok_message_and_fix():
    [bad] = _problems(check_runtime_platforms(_gke(), [Architecture.amd64]))
    assert set(bad.to_dict()) == {"check", "ok", "message", "fix", "warning"}


def test_gpu_taint_not_tolerated_by_the_executor_means_gpu_jobs_queue_forever(good_executor):
    findings = check_executor_config(_gke(), _with(good_executor, toleratedTaints=["kubernetes.io/arch"]))
    bad = _problems(findings)
    assert bad and all(f.check == "executor.tolerated-taints" for f in bad)
    a100 = next(f for f in bad if f.message.startswith("accelerator nvidia-tesla-a100:"))
    assert "taint nvidia.com/gpu=present:NoSchedule" in a100.message and "stay QUEUED forever" in a100.message
    assert "add nvidia.com/gpu to kubernetes.toleratedTaints" in a100.fix


def test_untracked_accelerator_label_rejects_gpu_jobs(good_executor):
    tracked = [k for k in good_executor["kubernetes"]["trackedNodeLabels"] if k != "cloud.google.com/gke-accelerator"]
    [bad] = _problems(check_executor_config(_gke(), _with(good_executor, trackedNodeLabels=tracked)))
    assert bad.message.startswith("cloud.google.com/gke-accelerator (used by the node selector of accelerator b200")
    assert 'REJECTED with "label cloud.google.com/gke-accelerator not set"' in bad.message


def test_gpu_nodes_taint_is_covered_by_the_resource_toleration_the_connector_adds():
    # No tolerations in the entry: the connector adds nvidia.com/gpu:NoSchedule (Exists) to every GPU job.
    groups = NodeGroups.from_mapping(
        {
            "architectures": {"amd64": {}},
            "accelerators": {"nvidia-l4": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}},
        }
    )
    assert not _problems(check_node_groups(groups))
    other = NodeGroups.from_mapping(
        {
            "architectures": {"amd64": {}},
            "accelerators": {"nvidia-l4": {"taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]}},
        }
    )
    [bad] = _problems(check_node_groups(other))
    assert "add to accelerators.nvidia-l4.tolerations" in bad.fix


def test_gpu_resource_missing_from_the_schedulers_supported_resource_types(good_scheduler):
    # Armada fails such jobs: internal/scheduler/internaltypes/resource_list_factory.go
    # (FromJobResourceListFailOnUnknown: "resource type %q is not supported").
    scheduler = copy.deepcopy(good_scheduler)
    scheduler["scheduling"]["supportedResourceTypes"] = [{"name": "cpu"}, {"name": "memory"}]
    [bad] = _problems(check_scheduler_config(scheduler, groups=_gke()))
    assert bad.check == "scheduler.supported-resources"
    assert "resource type nvidia.com/gpu is not supported" in bad.message
    assert "{name: nvidia.com/gpu" in bad.fix
    scheduler["scheduling"]["supportedResourceTypes"].append({"name": "nvidia.com/gpu", "resolution": "1"})
    assert not _problems(check_scheduler_config(scheduler, groups=_gke()))


def test_platform_without_accelerators_needs_no_gpu_resource(good_scheduler):
    scheduler = copy.deepcopy(good_scheduler)
    scheduler["scheduling"]["supportedResourceTypes"] = [{"name": "cpu"}, {"name": "memory"}]
    findings = check_scheduler_config(scheduler, groups=NodeGroups.preset("generic"))
    assert not _problems(findings)
    assert not [f for f in findings if f.check == "scheduler.supported-resources"]


def test_priority_classes_must_exist_and_match_preemptibility(good_scheduler):
    scheduler = copy.deepcopy(good_scheduler)
    scheduler["scheduling"]["priorityClasses"] = {"armada-default": {"priority": 1000, "preemptible": False}}
    [bad] = _problems(check_scheduler_config(scheduler, groups=_gke()))
    assert bad.check == "scheduler.priority-classes"
    assert "interruptible tasks get priority class armada-preemptible" in bad.message
    scheduler["scheduling"]["priorityClasses"]["armada-preemptible"] = {"priority": 1000, "preemptible": False}
    [bad] = _problems(check_scheduler_config(scheduler, groups=_gke()))
    assert "preemptible: False" in bad.message
    scheduler["scheduling"]["priorityClasses"]["armada-preemptible"]["preemptible"] = True
    assert not _problems(check_scheduler_config(scheduler, groups=_gke()))


def test_node_groups_that_say_how_their_node_names_start_pass_on_eks():
    from armada_flyte.admin.doctor.config_checks import check_node_names

    preset = NodeGroups.preset("eks-karpenter")
    named = {
        arch: group.model_copy(update={"node_name_prefixes": [f"ip-10-{n}-"]})
        for n, (arch, group) in enumerate(preset.architectures.items())
    }
    [good] = check_node_names(preset.model_copy(update={"architectures": named}))
    assert good.ok


def test_node_names_are_no_concern_where_they_carry_the_pool():
    from armada_flyte.admin.doctor.config_checks import check_node_names

    assert check_node_names(_gke()) == []


def test_a_fix_points_to_the_example_a_pip_install_can_print(good_executor):
    findings = check_executor_config(_gke(), _with(good_executor, toleratedTaints=["nvidia.com/gpu"]))
    [bad] = _problems(findings)
    assert "armada-flyte doctor --example executor-config" in bad.fix


# ---- the admin's fallback architecture ----
FALLBACK_FILE = {"fallback_architecture": "amd64", "architectures": {"amd64": {}, "arm64": {}}}


def test_no_fallback_says_what_happens_to_unreadable_images():
    [finding] = check_fallback(NodeGroups.preset("gke"), None, True)
    assert finding.ok and not finding.warning and finding.message.startswith("no fallback architecture")


def test_the_files_fallback_is_reported_with_who_set_it():
    [finding] = check_fallback(NodeGroups.from_mapping(FALLBACK_FILE), None, True)
    assert finding.ok and not finding.warning
    assert finding.message.startswith("fallback architecture amd64 (fallback_architecture in the node-group file)")


def test_the_connector_setting_overrides_the_files_fallback():
    [finding] = check_fallback(NodeGroups.from_mapping(FALLBACK_FILE), Architecture.arm64, True)
    assert finding.ok
    assert "fallback architecture arm64 (the connector setting fallback_architecture" in finding.message
    assert "over the file's amd64" in finding.message


def test_a_connector_fallback_the_groups_do_not_offer_is_a_problem():
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}})
    [finding] = check_fallback(groups, Architecture.arm64, True)
    assert not finding.ok
    assert "ARMADA_FLYTE_FALLBACK_ARCHITECTURE" in finding.message and "don't offer (amd64)" in finding.message
    assert finding.fix.startswith("set it to one of amd64")


def test_a_fallback_without_the_image_check_is_a_warning_that_it_never_applies():
    [finding] = check_fallback(NodeGroups.from_mapping(FALLBACK_FILE), None, False)
    assert finding.ok and finding.warning and "never applies" in finding.message
    assert "ARMADA_FLYTE_CHECK_IMAGE_PLATFORMS=true" in finding.fix
