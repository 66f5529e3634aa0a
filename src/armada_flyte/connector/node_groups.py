"""The platform admin's node-group file: how each architecture is reached on their clusters.

Pure data and rules, no I/O beyond reading the file. One entry per architecture says which
node selector, tolerations and extra required node-affinity terms put a pod on that
architecture's nodes. Label keys and values, and toleration fields, follow Kubernetes' rules.
"""

from __future__ import annotations

import pathlib
from typing import Any, Dict, List, Optional

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from armada_flyte.architecture import Architecture
from armada_flyte.config_file import read_yaml
from armada_flyte.errors import ArchitectureNotOffered, InvalidConfig, invalid_config_from
from armada_flyte.kube import ARCH_LABEL, label_key_problem, label_value_problem
from armada_flyte.kube_objects import MatchExpression, StrictModel, Taint, Toleration


class NodeGroup(StrictModel):
    """How pods reach one architecture's nodes."""

    node_group: str = Field(default="", description="Name shown to users and in job metadata.")
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


class NodeGroups(StrictModel):
    """The whole node-group file: one `NodeGroup` per offered architecture."""

    platform: str = Field(default="custom", description="Which platform this file describes (gke, eks, ...).")
    default_architecture: Optional[Architecture] = None
    architectures: Dict[Architecture, NodeGroup]
    _origin: str = PrivateAttr(default="node-group config")

    @property
    def origin(self) -> str:
        """Where these groups came from: the file's path, or `preset NAME`."""
        return self._origin

    @field_validator("default_architecture", mode="before")
    @classmethod
    def _normalise_default(cls, value: Any) -> Any:
        return None if value in (None, "") else Architecture.parse(value, "default_architecture")

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
        return self

    @property
    def offered(self) -> list[str]:
        return sorted(a.value for a in self.architectures)

    def group_for(self, architecture: Architecture, source: str = "task") -> NodeGroup:
        """The node group of `architecture`, or `ArchitectureNotOffered` naming what is offered."""
        group = self.architectures.get(architecture)
        if group is None:
            raise ArchitectureNotOffered(architecture.value, self.offered, source)
        return group

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


PRESETS_DIR = pathlib.Path(__file__).parent / "presets"
