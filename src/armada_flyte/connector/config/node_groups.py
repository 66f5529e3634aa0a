"""The platform admin's node-group file: how each architecture is reached on their clusters.

Pure data and rules, no I/O beyond reading the file. One entry per architecture says which
node selector, tolerations and extra required node-affinity terms put a pod on that
architecture's nodes; one entry per accelerator says the same for its GPU nodes; and the
`interruptible` / `non_interruptible` classes say which Armada priority class (and which spot
tolerations) a task gets. Label keys and values, and toleration fields, follow Kubernetes' rules.
"""

from __future__ import annotations

import pathlib
from typing import Any, Dict, Iterable, List, Optional

from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from armada_flyte.architecture import Architecture
from armada_flyte.config_file import read_yaml
from armada_flyte.errors import AcceleratorNotOffered, ArchitectureNotOffered, InvalidConfig, invalid_config_from
from armada_flyte.kube import ARCH_LABEL, dns_subdomain_problem, label_key_problem, label_value_problem
from armada_flyte.kube_objects import MatchExpression, StrictModel, Taint, Toleration

DEFAULT_SPILL_AFTER_SECONDS = 120.0
"""How long a job of an architecture preference waits queued for room before it moves on, unless the
task or the node-group file says otherwise."""


class Constraints(StrictModel):
    """Node selector, tolerations and required node affinity that reach a set of nodes, and the
    taints those nodes carry (so the doctor can check the tolerations cover them)."""

    node_selector: Dict[str, str] = Field(default_factory=dict)
    tolerations: List[Toleration] = Field(default_factory=list)
    required_node_affinity: List[MatchExpression] = Field(default_factory=list)
    taints: List[Taint] = Field(default_factory=list, description="Taints the group's nodes carry.")

    @field_validator("node_selector")
    @classmethod
    def _labels(cls, selector: Dict[str, str]) -> Dict[str, str]:
        for key, value in selector.items():
            if problem := label_key_problem(key):
                raise ValueError(f"key {key!r}: {problem}")
            if problem := label_value_problem(value):
                raise ValueError(f"key {key!r}: {problem}")
        return selector

    def untolerated_taints(self) -> list[Taint]:
        """Taints of this group's nodes that its own tolerations don't cover (pods would never land)."""
        return [
            t
            for t in self.taints
            if t.effect != "PreferNoSchedule" and not any(tol.tolerates(t) for tol in self.tolerations)
        ]


class NodeGroup(Constraints):
    """How pods reach one architecture's nodes."""

    node_group: str = Field(default="", description="Name shown to users and in job metadata.")
    node_name_prefixes: List[str] = Field(
        default_factory=list,
        description="How this group's node names start, to tell where an `any` task ran (default: `<node_group>-`).",
    )

    @field_validator("node_name_prefixes")
    @classmethod
    def _prefixes(cls, prefixes: List[str]) -> List[str]:
        if any(not p.strip() for p in prefixes):
            raise ValueError("a node name prefix can't be empty (leave the list out for `<node_group>-`)")
        return prefixes

    def names_node(self, node: str) -> int:
        """How strongly `node`'s name says it belongs to this group: the length of the matched prefix, 0 for no.

        Armada reports a run's node by name only (JobRunDetails.node), never its labels, so the name is the
        one clue: a `node_name_prefixes` entry, else `<node_group>-` at the start or `-<node_group>-` inside
        (GKE names nodes `gke-<cluster>-<pool>-<hash>-<id>`).
        """
        if self.node_name_prefixes:
            return max((len(p) for p in self.node_name_prefixes if node.startswith(p)), default=0)
        if not self.node_group:
            return 0
        if node.startswith(self.node_group + "-"):
            return len(self.node_group) + 1
        return len(self.node_group) + 2 if f"-{self.node_group}-" in node else 0


DEVICE_CLASS_RESOURCES = {
    "NVIDIA_GPU": "nvidia.com/gpu",
    "AMD_GPU": "amd.com/gpu",
    "GOOGLE_TPU": "google.com/tpu",
    "AMAZON_NEURON": "aws.amazon.com/neuron",
    "HABANA_GAUDI": "habana.ai/gaudi",
}
"""The Kubernetes resource each Flyte accelerator device class is counted in (device plugins' names)."""


class Accelerator(Constraints):
    """How pods reach one accelerator's nodes (keyed by the device name Flyte sends, e.g. nvidia-tesla-a100)."""

    resource: str = Field(default="", description="Resource the count is requested in; default by device class.")
    partition_label: str = Field(default="", description="Node label carrying the MIG partition size.")
    partitions: List[str] = Field(default_factory=list, description="MIG partition sizes offered (empty: none).")

    @field_validator("resource", "partition_label")
    @classmethod
    def _label_key(cls, key: str) -> str:
        if key and (problem := label_key_problem(key)):
            raise ValueError(problem)
        return key

    @field_validator("partitions")
    @classmethod
    def _partitions(cls, partitions: List[str]) -> List[str]:
        for value in partitions:
            if problem := label_value_problem(value):
                raise ValueError(problem)
        return partitions

    @model_validator(mode="after")
    def _partitions_need_label(self) -> Accelerator:
        if self.partitions and not self.partition_label:
            raise ValueError("partitions are offered through a node label: set partition_label too")
        return self


class CapacityClass(Constraints):
    """What an interruptible (or non-interruptible) task gets: an Armada priority class, and the
    constraints that reach (or avoid) spot capacity."""

    priority_class: str = ""

    @field_validator("priority_class")
    @classmethod
    def _name(cls, name: str) -> str:
        if name and (problem := dns_subdomain_problem(name)):
            raise ValueError(problem)
        return name


DEFAULT_INTERRUPTIBLE = CapacityClass(priority_class="armada-preemptible")
DEFAULT_NON_INTERRUPTIBLE = CapacityClass(priority_class="armada-default")
"""Armada's stock classes (its server's submission.allowedPriorityClassNames, config/server/config.yaml)."""


class NodeGroups(StrictModel):
    """The whole node-group file: one `NodeGroup` per offered architecture."""

    platform: str = Field(default="custom", description="Which platform this file describes (gke, eks, ...).")
    default_architecture: Optional[Architecture] = None
    architecture_preference: List[Architecture] = Field(
        default_factory=list,
        description="A platform-wide order (e.g. [arm64, amd64]) for tasks that set no architecture: the first "
        "while it has room, the next after spill_after_seconds. Replaces default_architecture.",
    )
    spill_after_seconds: float = Field(
        default=DEFAULT_SPILL_AFTER_SECONDS,
        gt=0,
        description="How long a job of a preference waits queued for room before it moves to the next architecture.",
    )
    architectures: Dict[Architecture, NodeGroup]
    fallback_architecture: Optional[Architecture] = Field(
        default=None,
        description="Where tasks with a preference or `any` go when the connector can't read their image's "
        "platforms at submit (registry down, no credentials): they are narrowed to it instead of going on "
        "un-narrowed, or being refused by image_check_blocks_when_unreachable. Pinned tasks are unaffected.",
    )
    accelerators: Dict[str, Accelerator] = Field(default_factory=dict)
    interruptible: CapacityClass = DEFAULT_INTERRUPTIBLE
    non_interruptible: CapacityClass = DEFAULT_NON_INTERRUPTIBLE
    _origin: str = PrivateAttr(default="node-group config")
    _fallback_set_by: str = PrivateAttr(default="")

    @property
    def origin(self) -> str:
        """Where these groups came from: the file's path, or `preset NAME`."""
        return self._origin

    @property
    def fallback_set_by(self) -> str:
        """Who set `fallback_architecture`: the node-group file (its origin) or the connector setting that
        overrides it; empty when it is unset."""
        if self.fallback_architecture is None:
            return ""
        return self._fallback_set_by or f"fallback_architecture in {self.origin}"

    @field_validator("default_architecture", mode="before")
    @classmethod
    def _normalise_default(cls, value: Any) -> Any:
        return None if value in (None, "") else Architecture.parse(value, "default_architecture")

    @field_validator("fallback_architecture", mode="before")
    @classmethod
    def _normalise_fallback(cls, value: Any, info: ValidationInfo) -> Any:
        if value in (None, ""):
            return None
        try:
            fallback = Architecture.parse(value, "fallback_architecture")
        except InvalidConfig as exc:
            raise ValueError(exc.fix) from None  # pydantic names the field and the value
        offered = info.data.get("architectures")
        if offered is not None and fallback not in offered:  # None: the architectures were invalid, said already
            raise ValueError(
                _fallback_not_offered(fallback, offered, "the node groups", "leave fallback_architecture out")
            )
        return fallback

    @field_validator("architecture_preference", mode="before")
    @classmethod
    def _normalise_preference(cls, value: Any) -> Any:
        if value in (None, ""):
            return []
        values = value.split(",") if isinstance(value, str) else value
        if not isinstance(values, list):
            raise ValueError("list the architectures in order, e.g. [arm64, amd64]")
        parsed = [Architecture.parse(v, "architecture_preference") for v in values]
        if len(parsed) < 2 or len(set(parsed)) != len(parsed):
            raise ValueError("list two or more distinct architectures in order, e.g. [arm64, amd64]")
        return parsed

    @field_validator("architectures", mode="before")
    @classmethod
    def _normalise_keys(cls, value: Any) -> Any:
        if not isinstance(value, dict) or not value:
            raise ValueError("list at least one architecture (amd64 and/or arm64) with its node group")
        return {Architecture.parse(k, f"architectures.{k}"): v for k, v in value.items()}

    @model_validator(mode="after")
    def _fill_and_check(self) -> NodeGroups:
        filled = {}
        for arch, group in self.architectures.items():
            selector = group.node_selector or {ARCH_LABEL: arch.value}
            pinned = selector.get(ARCH_LABEL)
            if pinned is not None and pinned != arch.value:
                raise ValueError(
                    f"architectures.{arch.value}.node_selector pins {ARCH_LABEL}={pinned}; "
                    f"it must be {arch.value} (or leave the key out)"
                )
            filled[arch] = group.model_copy(
                update={"node_selector": selector, "node_group": group.node_group or arch.value}
            )
        object.__setattr__(self, "architectures", filled)
        if self.default_architecture is not None and self.default_architecture not in filled:
            raise ValueError(
                f"default_architecture {self.default_architecture.value} is not among the architectures "
                f"listed ({', '.join(a.value for a in filled)})"
            )
        if self.architecture_preference and self.default_architecture is not None:
            raise ValueError(
                "set default_architecture or architecture_preference, not both: the preference's first "
                "architecture is where tasks that set none go first"
            )
        missing = [a.value for a in self.architecture_preference if a not in filled]
        if missing:
            raise ValueError(
                f"architecture_preference names {', '.join(missing)}, not among the architectures listed "
                f"({', '.join(a.value for a in filled)})"
            )
        return self

    @field_validator("accelerators", mode="before")
    @classmethod
    def _accelerator_keys(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        keys = [str(k).lower() for k in value]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"accelerator names are matched ignoring case; {', '.join(repeated)} is listed twice")
        return {str(k).lower(): v for k, v in value.items()}

    @property
    def offered(self) -> list[str]:
        return sorted(a.value for a in self.architectures)

    @property
    def offered_accelerators(self) -> list[str]:
        return sorted(self.accelerators)

    def accelerator_for(self, device: str) -> Accelerator:
        """The entry of `device` (case ignored), or `AcceleratorNotOffered` naming what is offered."""
        entry = self.accelerators.get(device.lower())
        if entry is None:
            raise AcceleratorNotOffered(device, self.offered_accelerators)
        return entry

    def capacity_class(self, interruptible: bool) -> CapacityClass:
        return self.interruptible if interruptible else self.non_interruptible

    def constraint_sets(self) -> list[tuple[str, Constraints]]:
        """Every set of constraints in the file, named as the doctor reports it."""
        named: list[tuple[str, Constraints]] = [
            (f"node group {g.node_group} ({a.value})", g) for a, g in sorted(self.architectures.items())
        ]
        named += [(f"accelerator {name}", entry) for name, entry in sorted(self.accelerators.items())]
        named += [("interruptible tasks", self.interruptible), ("non-interruptible tasks", self.non_interruptible)]
        return named

    def with_fallback(self, fallback: Architecture, set_by: str) -> NodeGroups:
        """These groups with `fallback` as their fallback architecture instead of the file's, as the connector
        setting `set_by` (ARMADA_FLYTE_FALLBACK_ARCHITECTURE) says; `InvalidConfig` naming the setting, the
        value and the fix when the groups don't offer it."""
        if fallback not in self.architectures:
            raise InvalidConfig(
                set_by,
                fallback.value,
                _fallback_not_offered(fallback, self.architectures, f"the node groups of {self.origin}", "unset it"),
            )
        groups = self.model_copy(update={"fallback_architecture": fallback})
        groups._fallback_set_by = set_by
        return groups

    def group_for(self, architecture: Architecture, source: str = "task") -> NodeGroup:
        """The node group of `architecture`, or `ArchitectureNotOffered` naming what is offered."""
        group = self.architectures.get(architecture)
        if group is None:
            raise ArchitectureNotOffered(architecture.value, self.offered, source)
        return group

    def architecture_of_node(self, node: str, among: Iterable[Architecture]) -> Optional[Architecture]:
        """Which of `among` the node `node` belongs to, told by its name; None when no group (or several
        equally) claims it."""
        scores = sorted(
            ((self.architectures[a].names_node(node), a) for a in among if a in self.architectures),
            key=lambda pair: pair[0],
            reverse=True,
        )
        if not scores or scores[0][0] == 0 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
            return None
        return scores[0][1]

    @classmethod
    def from_mapping(cls, data: Any, origin: str = "node-group config") -> NodeGroups:
        try:
            groups = cls.model_validate(data)
        except ValidationError as exc:
            raise invalid_config_from(exc, origin) from None
        except InvalidConfig as exc:
            raise InvalidConfig(f"{origin}: {exc.field}", exc.value, exc.fix) from None
        groups._origin = origin
        return groups

    @classmethod
    def from_yaml(cls, path: str | pathlib.Path) -> NodeGroups:
        data = read_yaml(
            path, "node_groups_file", "point ARMADA_FLYTE_NODE_GROUPS_FILE at a node-group YAML (presets are in arch/)"
        )
        return cls.from_mapping(data, str(path))

    @classmethod
    def load(cls, file: Optional[str | pathlib.Path] = None, preset: Optional[str] = None) -> NodeGroups:
        """The admin's file when given, else the named preset, else `generic` (no default architecture)."""
        if file is not None:
            return cls.from_yaml(file)
        return cls.preset(preset or "generic")

    @classmethod
    def preset(cls, name: str) -> NodeGroups:
        """A preset shipped with the package (`gke`, `eks-karpenter`, `aks`, `embedded`)."""
        path = PRESETS_DIR / f"{name}.yaml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in PRESETS_DIR.glob("*.yaml")))
            raise InvalidConfig("preset", name, f"known presets: {known}")
        groups = cls.from_yaml(path)
        groups._origin = f"preset {name} ({path.name})"
        return groups


def _fallback_not_offered(fallback: Architecture, offered: Iterable[Architecture], groups: str, unset: str) -> str:
    names = ", ".join(sorted(a.value for a in offered))
    return (
        f"the fallback architecture must be one {groups} offer ({names}), as tasks are placed on it; set it to "
        f"one of them, add {fallback.value} under architectures in the node-group file, or {unset}"
    )


PRESETS_DIR = pathlib.Path(__file__).parent / "presets"
