"""Checks of the node-group file against itself, the Armada executor and scheduler configs, and the runtime image.

Accelerator entries and the interruptible classes are checked like architecture groups: their
taints must be tolerated (by the entry, or by the `<resource>` toleration the connector adds to
every GPU job), their labels tracked, their taint keys in the executor's toleratedTaints.

Pure: every function takes parsed data and returns `Finding`s, so each rule is tested without
files or servers. The rules mirror how Armada treats nodes (docs/how-it-works.md): the executor
reports only the node labels it tracks and marks nodes with untolerated NoSchedule taints
unschedulable; the scheduler places gangs by uniformity label only if it indexes that label.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from armada_flyte.admin.doctor.findings import Finding, passed, problem, warning
from armada_flyte.architecture import Architecture
from armada_flyte.connector.config.node_groups import Accelerator, Constraints, NodeGroup, NodeGroups
from armada_flyte.connector.config.settings_groups import FALLBACK_SETTING
from armada_flyte.connector.submit.accelerators import GPU_RESOURCE
from armada_flyte.kube import ARCH_LABEL
from armada_flyte.kube_objects import Taint, Toleration

DEFAULT_TRACKED_LABELS = ("kubernetes.io/hostname",)
"""What Armada's executor tracks when `kubernetes.trackedNodeLabels` is not set."""

UNIFORMITY_LABEL = ARCH_LABEL
"""The node uniformity label the connector gives gangs that pin no architecture."""

EXECUTOR_CONFIG_EXAMPLE = "the example `armada-flyte doctor --example executor-config` prints"
SCHEDULER_CONFIG_EXAMPLE = "the example `armada-flyte doctor --example scheduler-config` prints"
"""The shipped examples (deploy/armada/ in the repository, in the package for a pip install)."""

# Affinity operators that hold only on nodes carrying the label: with the label untracked, no
# node reported to Armada carries it and the job is rejected, as for a node selector.
_NEEDS_LABEL = ("In", "Exists", "Gt", "Lt")


def check_node_groups(groups: NodeGroups) -> list[Finding]:
    """Each group's (and accelerator's, and capacity class's) tolerations must cover its nodes' own
    taints, or its pods never land."""
    findings = []
    for name, constraints, jobs in _constraint_sets(groups):
        if not isinstance(constraints, NodeGroup) and not constraints.taints:
            continue  # only architecture groups are reported when there is nothing to check
        missing = [t for t in constraints.untolerated_taints() if not _implied_toleration(groups, name, t)]
        if not missing:
            taints = ", ".join(str(t) for t in constraints.taints)
            note = f"tolerates its taints ({taints})" if taints else "has no taints to tolerate"
            findings.append(passed("node-groups.tolerations", f"{name} {note}"))
            continue
        for taint in missing:
            findings.append(
                problem(
                    "node-groups.tolerations",
                    f"{name}: its nodes carry taint {taint}, but its tolerations don't cover it, "
                    f"so every {jobs} is REJECTED with "
                    f'"taint {taint} not tolerated"',
                    f"add to {_file_path(name, groups)}.tolerations in the node-group file: {_toleration_for(taint)}",
                )
            )
    return findings


NAMES_WITHOUT_POOL = ("eks",)
"""Platforms (by the node-group file's `platform`, its start) whose node names don't carry the node pool: EKS names
a node by its private address (`ip-10-0-1-23.ec2.internal`)."""


def check_node_names(groups: NodeGroups) -> list[Finding]:
    """Armada reports a run's node by name only, so where names carry no pool, `node_name_prefixes` must say
    which architecture a node is; without them an `any` task's architecture reads "not known"."""
    if not groups.platform.startswith(NAMES_WITHOUT_POOL) or len(groups.architectures) < 2:
        return []
    unnamed = [
        f"node group {group.node_group or arch.value} ({arch.value})"
        for arch, group in sorted(groups.architectures.items(), key=lambda item: item[0].value)
        if not group.node_name_prefixes
    ]
    if not unnamed:
        return [passed("node-groups.node-names", "every architecture's node group says how its node names start")]
    return [
        problem(
            "node-groups.node-names",
            f"platform {groups.platform}: nodes are named by their private address (ip-10-0-1-23.ec2.internal), "
            f"without their pool, and {', '.join(unnamed)} set no node_name_prefixes, so the architecture a task "
            'with architecture `any` ran on reads "not known" in its Flyte message, custom_info, the jobs table '
            "and the view (placement itself is unaffected)",
            "give each architecture's NodePool subnets of its own and list how their node names start under "
            "node_name_prefixes in the node-group file (e.g. arm64: node_name_prefixes: [ip-10-1-]); see the EKS "
            "guide, docs/admins/eks-karpenter.md",
        )
    ]


def check_fallback(
    groups: NodeGroups, setting: Optional[Architecture] = None, images_checked: Optional[bool] = None
) -> list[Finding]:
    """The admin's fallback architecture: which, who set it, and whether it can apply.

    `setting`: the connector's own `fallback_architecture` (ARMADA_FLYTE_FALLBACK_ARCHITECTURE), which overrides
    the file's; `images_checked`: the connector's `check_image_platforms` (None: its settings can't be read).
    The file's own fallback was checked when it loaded (one it doesn't offer makes the file invalid)."""
    if setting is not None and setting not in groups.architectures:
        return [
            problem(
                "node-groups.fallback",
                f"{FALLBACK_SETTING} is {setting.value}, which these node groups don't offer "
                f"({', '.join(groups.offered)}): the connector's first call fails with InvalidConfig naming it",
                f"set it to one of {', '.join(groups.offered)}, or unset it to use the file's fallback_architecture",
            )
        ]
    if setting is not None:
        over = groups.fallback_architecture
        fallback, set_by = setting, FALLBACK_SETTING + (f", over the file's {over.value}" if over else "")
    elif groups.fallback_architecture is not None:
        fallback, set_by = groups.fallback_architecture, "fallback_architecture in the node-group file"
    else:
        return [
            passed(
                "node-groups.fallback",
                "no fallback architecture: a task with a preference or `any` whose image's platforms can't be read "
                "at submit goes on unchecked (refused with image_check_blocks_when_unreachable)",
            )
        ]
    said = (
        f"fallback architecture {fallback.value} ({set_by}): a task with a preference or `any` that includes it, "
        "whose image's platforms can't be read at submit, runs on it (pinned tasks are unaffected)"
    )
    if images_checked is False:
        return [
            warning(
                "node-groups.fallback",
                f"{said}; but the connector settings here leave check_image_platforms off, so images' platforms "
                "are never read and the fallback never applies",
                "set ARMADA_FLYTE_CHECK_IMAGE_PLATFORMS=true in the connector's environment, or leave the fallback out",
            )
        ]
    return [passed("node-groups.fallback", said)]


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


def check_scheduler_config(
    config: Mapping[str, Any], uniformity_label: str = UNIFORMITY_LABEL, groups: Optional[NodeGroups] = None
) -> list[Finding]:
    """Gangs are placed by uniformity label only when the scheduler indexes it; accelerator jobs need
    their resource among the scheduler's supported resource types; priority classes must exist."""
    settings = scheduler_settings(config)
    scheduling = settings.get("scheduling") or {}
    indexed = set(scheduling.get("indexedNodeLabels") or ())
    findings: list[Finding] = []
    if uniformity_label in indexed:
        findings.append(passed("scheduler.indexed-labels", f"{uniformity_label} is in scheduling.indexedNodeLabels"))
    else:
        where = _misplaced(settings, ("indexedNodeLabels",), "scheduling")
        findings.append(
            problem(
                "scheduler.indexed-labels",
                f"{uniformity_label} is not in the scheduler's scheduling.indexedNodeLabels{where}: gangs that pin "
                f"no architecture get it as their node uniformity label (so all members land on one architecture), "
                f'and Armada leaves such gangs unschedulable with "uniformity label {uniformity_label} is not indexed"',
                f"add {uniformity_label} to scheduling.indexedNodeLabels in the Armada scheduler config "
                f"(see {SCHEDULER_CONFIG_EXAMPLE}) and restart the scheduler",
            )
        )
    if groups is not None:
        findings += _supported_resource_findings(groups, settings, scheduling)
        findings += _priority_class_findings(groups, scheduling)
    return findings


def _supported_resource_findings(
    groups: NodeGroups, settings: Mapping[str, Any], scheduling: Mapping[str, Any]
) -> list[Finding]:
    """Armada's scheduler fails jobs requesting a resource outside scheduling.supportedResourceTypes
    ("resource type ... is not supported", internal/scheduler/internaltypes/resource_list_factory.go)."""
    resources = sorted({_accelerator_resource(name, entry) for name, entry in groups.accelerators.items()})
    if groups.accelerators:
        resources = sorted(set(resources) | {GPU_RESOURCE})  # a bare count (gpu=1) always asks for it
    if not resources:
        return []
    if "supportedResourceTypes" not in scheduling:
        where = _misplaced(settings, ("supportedResourceTypes",), "scheduling")
        return [
            passed(
                "scheduler.supported-resources",
                f"scheduling.supportedResourceTypes is not set in this file{where}, so Armada's default applies "
                f"(config/scheduler/config.yaml lists nvidia.com/gpu); accelerator jobs need {', '.join(resources)}",
            )
        ]
    supported = {
        entry.get("name") for entry in scheduling.get("supportedResourceTypes") or () if isinstance(entry, dict)
    }
    findings = []
    for resource in resources:
        if resource in supported:
            findings.append(
                passed("scheduler.supported-resources", f"{resource} is in scheduling.supportedResourceTypes")
            )
            continue
        findings.append(
            problem(
                "scheduler.supported-resources",
                f"{resource} is not in the scheduler's scheduling.supportedResourceTypes: Armada fails every job "
                f'requesting it with "resource type {resource} is not supported"',
                f'add {{name: {resource}, resolution: "1"}} to scheduling.supportedResourceTypes (and to '
                f"scheduling.indexedResources for faster matching) in the Armada scheduler config "
                f"(see {SCHEDULER_CONFIG_EXAMPLE}) and restart the scheduler",
            )
        )
    return findings


def _priority_class_findings(groups: NodeGroups, scheduling: Mapping[str, Any]) -> list[Finding]:
    """Interruptible tasks get the node-group file's priority classes; the scheduler must know them."""
    classes = scheduling.get("priorityClasses")
    if not isinstance(classes, Mapping):
        return []
    findings = []
    for what, capacity in (("interruptible", groups.interruptible), ("non_interruptible", groups.non_interruptible)):
        name = capacity.priority_class
        if not name:
            continue
        if name not in classes:
            findings.append(
                problem(
                    "scheduler.priority-classes",
                    f"{what} tasks get priority class {name} (node-group file), but the scheduler's "
                    f"scheduling.priorityClasses has only {', '.join(sorted(classes)) or 'none'}",
                    f"add {name} to scheduling.priorityClasses (and to the server's "
                    f"submission.allowedPriorityClassNames), or set {what}.priority_class to one of those",
                )
            )
            continue
        preemptible = bool((classes.get(name) or {}).get("preemptible", False))
        if preemptible != (what == "interruptible"):
            findings.append(
                problem(
                    "scheduler.priority-classes",
                    f"{what} tasks get priority class {name}, which the scheduler marks preemptible: {preemptible}",
                    f"give {what} tasks a class with preemptible: {str(what == 'interruptible').lower()}",
                )
            )
            continue
        findings.append(
            passed("scheduler.priority-classes", f"{what} tasks get {name} (preemptible: {str(preemptible).lower()})")
        )
    return findings


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


def labels_needed(group: Constraints) -> dict[str, tuple[str, bool]]:
    """Label keys a group's placement needs Armada to see: what uses each, and whether nodes must carry it."""
    needed = {key: ("node selector", True) for key in group.node_selector}
    for expression in group.required_node_affinity:
        use = f"node affinity {expression.key} {expression.operator}"
        needed.setdefault(expression.key, (use, expression.operator in _NEEDS_LABEL))
    if isinstance(group, Accelerator) and group.partitions:
        needed.setdefault(group.partition_label, ("MIG partition label", True))
    return needed


def _tracked_label_findings(groups: NodeGroups, tracked: set[str], tracked_set: bool, misplaced: str) -> list[Finding]:
    source = (
        "kubernetes.trackedNodeLabels"
        if tracked_set
        else f"trackedNodeLabels (not set, so only the default {', '.join(DEFAULT_TRACKED_LABELS)})"
    )
    users: dict[str, list[tuple[str, str, bool]]] = {}
    for name, constraints, _ in _constraint_sets(groups):
        for key, (use, must_carry) in labels_needed(constraints).items():
            users.setdefault(key, []).append((name, use, must_carry))
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
    for name, constraints, jobs in _constraint_sets(groups):
        for taint in constraints.taints:
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
                    f"{jobs}s pass submission and then stay QUEUED forever",
                    f"add {taint.key} to kubernetes.toleratedTaints in the Armada executor config "
                    f"(see {EXECUTOR_CONFIG_EXAMPLE}) and restart the executor",
                )
            )
    if not findings:
        findings.append(passed("executor.tolerated-taints", "no node group declares a NoSchedule taint"))
    return findings


def _constraint_sets(groups: NodeGroups) -> list[tuple[str, Constraints, str]]:
    """(name in findings, constraints, whose jobs they are) for every part of the node-group file."""
    out: list[tuple[str, Constraints, str]] = []
    for arch, group in sorted(groups.architectures.items()):
        out.append((_group_name(arch, group), group, f"{arch.value} job"))
    for device, entry in sorted(groups.accelerators.items()):
        out.append((f"accelerator {device}", entry, f"{device} GPU job"))
    out.append(("interruptible tasks", groups.interruptible, "interruptible job"))
    out.append(("non-interruptible tasks", groups.non_interruptible, "non-interruptible job"))
    return out


def _accelerator_resource(device: str, entry: Accelerator) -> str:
    return entry.resource or GPU_RESOURCE


def _implied_toleration(groups: NodeGroups, name: str, taint: Taint) -> bool:
    """The connector tolerates `<resource>:NoSchedule` (Exists) on every accelerator job itself."""
    if not name.startswith("accelerator "):
        return False
    entry = groups.accelerators[name.removeprefix("accelerator ")]
    implied = Toleration(key=_accelerator_resource(name, entry), operator="Exists", effect="NoSchedule")
    return implied.tolerates(taint)


def _file_path(name: str, groups: NodeGroups) -> str:
    """Where in the node-group file the finding's constraints live."""
    if name.startswith("accelerator "):
        return f"accelerators.{name.removeprefix('accelerator ')}"
    if name == "interruptible tasks":
        return "interruptible"
    if name == "non-interruptible tasks":
        return "non_interruptible"
    arch = name.rsplit("(", 1)[-1].rstrip(")")
    return f"architectures.{arch}"


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
    if groups.architecture_preference:
        order = ", ".join(a.value for a in groups.architecture_preference)
        default = f"the preference {order} (spilling after {groups.spill_after_seconds:g} s queued)"
    return f"{prefix}platform {groups.platform}, offers {offered}; default architecture {default}"
