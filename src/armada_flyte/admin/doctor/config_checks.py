"""Checks of the node-group file against itself, the Armada executor and scheduler configs, and the runtime image.

Pure: every function takes parsed data and returns `Finding`s, so each rule is tested without
files or servers. The rules mirror how Armada treats nodes (docs/how-it-works.md): the executor
reports only the node labels it tracks and marks nodes with untolerated NoSchedule taints
unschedulable; the scheduler places gangs by uniformity label only if it indexes that label.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from armada_flyte.admin.doctor.findings import Finding, passed, problem
from armada_flyte.architecture import Architecture
from armada_flyte.connector.node_groups import NodeGroup, NodeGroups
from armada_flyte.kube import ARCH_LABEL
from armada_flyte.kube_objects import Taint

DEFAULT_TRACKED_LABELS = ("kubernetes.io/hostname",)
"""What Armada's executor tracks when `kubernetes.trackedNodeLabels` is not set."""

UNIFORMITY_LABEL = ARCH_LABEL
"""The node uniformity label the connector gives gangs that pin no architecture."""

EXECUTOR_CONFIG_EXAMPLE = "deploy/armada/executor-config.yaml"
SCHEDULER_CONFIG_EXAMPLE = "deploy/armada/scheduler-config.yaml"

# Affinity operators that hold only on nodes carrying the label: with the label untracked, no
# node reported to Armada carries it and the job is rejected, as for a node selector.
_NEEDS_LABEL = ("In", "Exists", "Gt", "Lt")


def check_node_groups(groups: NodeGroups) -> list[Finding]:
    """Each group's tolerations must cover its nodes' own taints, or its pods never land."""
    findings = []
    for arch, group in sorted(groups.architectures.items()):
        name = _group_name(arch, group)
        missing = group.untolerated_taints()
        if not missing:
            taints = ", ".join(str(t) for t in group.taints)
            note = f"tolerates its taints ({taints})" if taints else "has no taints to tolerate"
            findings.append(passed("node-groups.tolerations", f"{name} {note}"))
            continue
        for taint in missing:
            findings.append(
                problem(
                    "node-groups.tolerations",
                    f"{name}: its nodes carry taint {taint}, but its tolerations don't cover it, "
                    f"so every {arch.value} job is REJECTED with "
                    f'"taint {taint} not tolerated"',
                    f"add to architectures.{arch.value}.tolerations in the node-group file: {_toleration_for(taint)}",
                )
            )
    return findings


def check_executor_config(groups: NodeGroups, config: Mapping[str, Any]) -> list[Finding]:
    """The executor must report every label the groups select on, and not hide their tainted nodes."""
    settings = executor_settings(config)
    kubernetes = settings.get("kubernetes") or {}
    tracked_set = "trackedNodeLabels" in kubernetes
    tracked = set(kubernetes.get("trackedNodeLabels") or ()) if tracked_set else set(DEFAULT_TRACKED_LABELS)
    tolerated = set(kubernetes.get("toleratedTaints") or ())
    misplaced = _misplaced(settings, ("trackedNodeLabels", "toleratedTaints"), "kubernetes")
    return [
        *_tracked_label_findings(groups, tracked, tracked_set, misplaced),
        *_tolerated_taint_findings(groups, tolerated, misplaced),
    ]


def check_scheduler_config(config: Mapping[str, Any], uniformity_label: str = UNIFORMITY_LABEL) -> list[Finding]:
    """Gangs are placed by uniformity label only when the scheduler indexes it."""
    settings = scheduler_settings(config)
    scheduling = settings.get("scheduling") or {}
    indexed = set(scheduling.get("indexedNodeLabels") or ())
    if uniformity_label in indexed:
        return [passed("scheduler.indexed-labels", f"{uniformity_label} is in scheduling.indexedNodeLabels")]
    where = _misplaced(settings, ("indexedNodeLabels",), "scheduling")
    return [
        problem(
            "scheduler.indexed-labels",
            f"{uniformity_label} is not in the scheduler's scheduling.indexedNodeLabels{where}: gangs that pin no "
            f"architecture get it as their node uniformity label (so all members land on one architecture), and "
            f'Armada leaves such gangs unschedulable with "uniformity label {uniformity_label} is not indexed"',
            f"add {uniformity_label} to scheduling.indexedNodeLabels in the Armada scheduler config "
            f"(see {SCHEDULER_CONFIG_EXAMPLE}) and restart the scheduler",
        )
    ]


def check_runtime_platforms(groups: NodeGroups, platforms: Iterable[Architecture]) -> list[Finding]:
    """Every architecture the platform offers must be in the runtime image, or its pods can't start."""
    have = set(platforms)
    listed = ", ".join(sorted(a.platform for a in have)) or "none"
    findings = []
    for arch, group in sorted(groups.architectures.items()):
        name = _group_name(arch, group)
        if arch in have:
            findings.append(passed("runtime-image.platforms", f"{name}: the runtime image has {arch.platform}"))
            continue
        findings.append(
            problem(
                "runtime-image.platforms",
                f"{name} offers {arch.value}, but the runtime image is built only for {listed}: "
                f'tasks placed there fail with "exec format error"',
                f"rebuild the runtime image with {arch.platform} among its platforms "
                f"(armada-flyte image build --tag REF --platform linux/amd64,linux/arm64 --push), "
                f"or remove {arch.value} from the node-group file",
            )
        )
    return findings


def executor_settings(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The executor's own settings, from its config file or from the Helm chart's values."""
    wrapped = config.get("applicationConfig")
    return wrapped if isinstance(wrapped, Mapping) else config


def scheduler_settings(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The scheduler's own settings, from its config file or from the Helm chart's values."""
    chart = config.get("scheduler")
    if isinstance(chart, Mapping) and isinstance(chart.get("applicationConfig"), Mapping):
        return chart["applicationConfig"]
    return executor_settings(config)


def labels_needed(group: NodeGroup) -> dict[str, tuple[str, bool]]:
    """Label keys a group's placement needs Armada to see: what uses each, and whether nodes must carry it."""
    needed = {key: ("node selector", True) for key in group.node_selector}
    for expression in group.required_node_affinity:
        use = f"node affinity {expression.key} {expression.operator}"
        needed.setdefault(expression.key, (use, expression.operator in _NEEDS_LABEL))
    return needed


def _tracked_label_findings(groups: NodeGroups, tracked: set[str], tracked_set: bool, misplaced: str) -> list[Finding]:
    source = (
        "kubernetes.trackedNodeLabels"
        if tracked_set
        else f"trackedNodeLabels (not set, so only the default {', '.join(DEFAULT_TRACKED_LABELS)})"
    )
    users: dict[str, list[tuple[str, str, bool]]] = {}
    for arch, group in sorted(groups.architectures.items()):
        for key, (use, must_carry) in labels_needed(group).items():
            users.setdefault(key, []).append((_group_name(arch, group), use, must_carry))
    findings = []
    for key, uses in users.items():
        if key in tracked:
            findings.append(passed("executor.tracked-labels", f"{key} is in {source}"))
            continue
        names = ", ".join(sorted({name for name, _, _ in uses}))
        what = ", ".join(sorted({use for _, use, _ in uses}))
        if key == ARCH_LABEL:
            effect = (
                "Armada never learns node architectures, so every arch-pinned job is REJECTED with "
                f'"label {key} not set"'
            )
        elif any(must_carry for _, _, must_carry in uses):
            effect = f'jobs of {names} are REJECTED with "label {key} not set"'
        else:
            effect = (
                f"Armada can't honour it when choosing a node, so it may lease jobs of {names} to nodes "
                f"the affinity excludes, where Kubernetes leaves the pod Pending"
            )
        findings.append(
            problem(
                "executor.tracked-labels",
                f"{key} (used by the {what} of {names}) is not in the executor's {source}{misplaced}: {effect}",
                f"add {key} to kubernetes.trackedNodeLabels in the Armada executor config of every cluster "
                f"(keep kubernetes.io/hostname there too; see {EXECUTOR_CONFIG_EXAMPLE}) and restart the executor",
            )
        )
    return findings


def _tolerated_taint_findings(groups: NodeGroups, tolerated: set[str], misplaced: str) -> list[Finding]:
    findings = []
    for arch, group in sorted(groups.architectures.items()):
        name = _group_name(arch, group)
        for taint in group.taints:
            if taint.effect != "NoSchedule":
                continue  # the executor hides only nodes with untolerated NoSchedule taints
            if taint.key in tolerated:
                findings.append(
                    passed(
                        "executor.tolerated-taints", f"{name}: taint key {taint.key} is in kubernetes.toleratedTaints"
                    )
                )
                continue
            findings.append(
                problem(
                    "executor.tolerated-taints",
                    f"{name}: its nodes carry taint {taint}, and taint key {taint.key} is not in the executor's "
                    f"kubernetes.toleratedTaints{misplaced}: the executor reports those nodes as unschedulable, so "
                    f"{arch.value} jobs pass submission and then stay QUEUED forever",
                    f"add {taint.key} to kubernetes.toleratedTaints in the Armada executor config "
                    f"(see {EXECUTOR_CONFIG_EXAMPLE}) and restart the executor",
                )
            )
    if not findings:
        findings.append(passed("executor.tolerated-taints", "no node group declares a NoSchedule taint"))
    return findings


def _misplaced(settings: Mapping[str, Any], keys: Iterable[str], section: str) -> str:
    """A note when a key sits at the top level, where Armada doesn't read it."""
    stray = [key for key in keys if key in settings]
    if not stray:
        return ""
    return f" ({', '.join(stray)} is at the top level of the file; Armada reads it only under {section}:)"


def _toleration_for(taint: Taint) -> str:
    if taint.value:
        return f"{{key: {taint.key}, operator: Equal, value: {taint.value}, effect: {taint.effect}}}"
    return f"{{key: {taint.key}, operator: Exists, effect: {taint.effect}}}"


def _group_name(arch: Architecture, group: NodeGroup) -> str:
    return f"node group {group.node_group} ({arch.value})"


def describe(groups: NodeGroups, origin: Optional[str] = None) -> str:
    """One line naming where the groups came from and what they offer."""
    offered = ", ".join(f"{arch.value} -> {group.node_group}" for arch, group in sorted(groups.architectures.items()))
    default = groups.default_architecture.value if groups.default_architecture else "none"
    prefix = f"{origin}: " if origin else ""
    return f"{prefix}platform {groups.platform}, offers {offered}; default architecture {default}"
