"""The platform admin's node-group file: how each architecture is reached on their clusters.

Pure data and rules, no I/O beyond reading the file. One entry per architecture says which
node selector, tolerations and extra required node-affinity terms put a pod on that
architecture's nodes. Label keys and values, and toleration fields, follow Kubernetes' rules.
"""

from __future__ import annotations

import pathlib
from typing import Any, Dict, List, Literal, Optional

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from armada_flyte.architecture import Architecture
from armada_flyte.armada_names import ARCH_LABEL
from armada_flyte.config_file import read_yaml
from armada_flyte.errors import ArchitectureNotOffered, InvalidConfig
from armada_flyte.k8s_names import label_key_problem, label_value_problem


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Toleration(_Strict):
    """A Kubernetes toleration, in its full shape."""

    key: str = ""
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    toleration_seconds: Optional[int] = Field(default=None, alias="tolerationSeconds")

    @model_validator(mode="after")
    def _kubernetes_rules(self) -> Toleration:
        if self.key and (problem := label_key_problem(self.key)):
            raise ValueError(f"key: {problem}")
        if not self.key and self.operator != "Exists":
            raise ValueError("an empty key tolerates every taint and needs operator: Exists")
        if self.operator == "Exists" and self.value:
            raise ValueError("operator Exists takes no value; use operator: Equal to match a value")
        if self.value and (problem := label_value_problem(self.value)):
            raise ValueError(f"value: {problem}")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds only applies with effect: NoExecute")
        return self

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' matching rule: key (or empty key), value for Equal, and effect (or empty effect)."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return True
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value

    def to_k8s(self) -> dict[str, Any]:
        """camelCase dict as a pod spec carries it, without empty fields."""
        out: dict[str, Any] = {"operator": self.operator}
        if self.key:
            out["key"] = self.key
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out


class Taint(_Strict):
    """A taint the nodes of a group carry (used to check the group's tolerations cover it)."""

    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        if problem := label_key_problem(key):
            raise ValueError(problem)
        return key

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class MatchExpression(_Strict):
    """One required node-affinity expression (all of a group's expressions must hold)."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: List[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _kubernetes_rules(self) -> MatchExpression:
        if problem := label_key_problem(self.key):
            raise ValueError(f"key: {problem}")
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        if self.operator in ("Gt", "Lt") and (len(self.values) != 1 or not self.values[0].lstrip("-").isdigit()):
            raise ValueError(f"operator {self.operator} needs exactly one integer value")
        for value in self.values if self.operator in ("In", "NotIn") else ():
            if problem := label_value_problem(value):
                raise ValueError(f"values: {problem}")
        return self

    def to_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        return out


class NodeGroup(_Strict):
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
        return [t for t in self.taints if t.effect != "PreferNoSchedule" and not any(tol.tolerates(t) for tol in self.tolerations)]


class NodeGroups(_Strict):
    """The whole node-group file: one `NodeGroup` per offered architecture."""

    platform: str = Field(default="custom", description="Which platform this file describes (gke, eks, ...).")
    default_architecture: Optional[Architecture] = None
    architectures: Dict[Architecture, NodeGroup]

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
            return cls.model_validate(data)
        except ValidationError as exc:
            raise _invalid(origin, exc) from None
        except InvalidConfig as exc:
            raise InvalidConfig(f"{origin}: {exc.field}", exc.value, exc.fix) from None

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
        return cls.from_yaml(path)


PRESETS_DIR = pathlib.Path(__file__).parent / "presets"


def _invalid(origin: str, exc: ValidationError) -> InvalidConfig:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    return InvalidConfig(f"{origin}: {where}", first.get("input"), message)
