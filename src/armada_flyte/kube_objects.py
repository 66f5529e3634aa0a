"""Kubernetes objects that configuration files spell out: tolerations, taints and node-affinity
expressions, validated by Kubernetes' rules. Shared by the node-group file (connector) and the
cluster file (embedded server).
"""

from __future__ import annotations

from typing import Any, List, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from armada_flyte.kube import MAX_INT64, int64_text_problem, label_key_problem, label_value_problem


class StrictModel(BaseModel):
    """Frozen, and unknown keys are errors: a typo in a config file never passes silently. Numbers are
    finite: NaN or infinity is refused, naming the field."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)


class Toleration(StrictModel):
    """A Kubernetes toleration, in its full shape."""

    key: str = ""
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    toleration_seconds: Optional[int] = Field(default=None, alias="tolerationSeconds", ge=-MAX_INT64 - 1, le=MAX_INT64)
    """An int64 in Kubernetes' Toleration (k8s.io/api/core/v1): a larger number is a typo, refused here."""

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


class Taint(StrictModel):
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


class MatchExpression(StrictModel):
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
        if self.operator in ("Gt", "Lt"):
            if len(self.values) != 1:
                raise ValueError(f"operator {self.operator} needs exactly one integer value")
            if problem := int64_text_problem(self.values[0]):
                raise ValueError(f"operator {self.operator} needs exactly one integer value: {problem}")
        for value in self.values if self.operator in ("In", "NotIn") else ():
            if problem := label_value_problem(value):
                raise ValueError(f"values: {problem}")
        return self

    def to_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        return out
