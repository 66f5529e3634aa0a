"""Failure categories on failed events, as Armada's executor assigns them.

Armada's executor classifies a failed pod by configurable rules (internal/executor/categorizer/):
the first rule that matches, across the categories in config order, names the category and
its optional subcategory; no match gives the default category. The server carries both into
the `failed` event (internal/server/event/conversion/conversions.go). The defaults here are
Armada's local deployment's (`_local/executor/config.yaml`): `oom` for an OOMKilled container,
`user_error` for exit codes 1, 2, 126 and 127, else `uncategorized`. The cluster file's
`errorCategories` section replaces them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, List, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from armada_flyte.kube import MAX_INT32
from armada_flyte.pod_runner.model import ContainerEnd

INTERNAL = "internal"
"""The category Armada gives failures of its own making (`CategoryInternal` in internal/common/errormatch/types.go)."""
SUBCATEGORY_POD_MISSING = "pod-missing"
SUBCATEGORY_MAX_RUNS_EXCEEDED = "max-runs-exceeded"
SUBCATEGORY_JOB_REJECTED = "job-rejected"
_MAX_NAME = 63
"""Category names longer than this are refused (`maxCategoryNameLen` in categorizer/classifier.go)."""
_CONDITIONS = ("OOMKilled", "Evicted", "DeadlineExceeded")


class _ExitCodes(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    operator: Literal["In", "NotIn"]
    values: List[Annotated[int, Field(ge=-MAX_INT32 - 1, le=MAX_INT32)]] = Field(min_length=1)


class _Pattern(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regex {pattern!r}: {exc}") from None
        return pattern


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    containerName: str = ""
    onConditions: List[str] = []
    onExitCodes: Optional[_ExitCodes] = None
    onTerminationMessage: Optional[_Pattern] = None
    onPodError: Optional[_Pattern] = None
    subcategory: str = Field("", max_length=_MAX_NAME)
    hint: str = ""

    @model_validator(mode="after")
    def _one_matcher(self) -> _Rule:
        matchers = [bool(self.onConditions), *(m is not None for m in (self.onExitCodes, self.onTerminationMessage))]
        if sum([*matchers, self.onPodError is not None]) != 1:
            raise ValueError(
                "give each rule exactly one of onConditions, onExitCodes, onTerminationMessage, onPodError"
            )
        unknown = [c for c in self.onConditions if c not in _CONDITIONS]
        if unknown:
            raise ValueError(f"unknown condition {unknown[0]!r}, valid values: {', '.join(_CONDITIONS)}")
        return self


class _Category(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=_MAX_NAME)
    rules: List[_Rule] = Field(min_length=1)


class ErrorCategories(BaseModel):
    """The cluster file's `errorCategories`, shaped as Armada's executor config `application.errorCategories`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    defaultCategory: str = Field("uncategorized", max_length=_MAX_NAME)
    defaultSubcategory: str = Field("", max_length=_MAX_NAME)
    categories: List[_Category] = [
        _Category(name="oom", rules=[_Rule(onConditions=["OOMKilled"])]),
        _Category(name="user_error", rules=[_Rule(onExitCodes=_ExitCodes(operator="In", values=[1, 2, 126, 127]))]),
    ]

    @model_validator(mode="after")
    def _unique(self) -> ErrorCategories:
        names = [c.name for c in self.categories]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"duplicate category name {repeated[0]!r}: give each category its own name")
        return self

    def classify(
        self, containers: tuple[ContainerEnd, ...], pod_reason: str = "", pod_error: str = ""
    ) -> Classification:
        """The category of a failed pod: its containers that exited non-zero, the pod's own reason
        (DeadlineExceeded, Evicted) and, for failures the executor saw itself, its message."""
        if not self.enabled:
            return Classification()
        failed = [c for c in containers if c.exit_code != 0]
        for category in self.categories:
            for rule in category.rules:
                if _matches(rule, failed, pod_reason, pod_error):
                    return Classification(category.name, rule.subcategory, rule.hint)
        return Classification(self.defaultCategory, self.defaultSubcategory)


@dataclass(frozen=True)
class Classification:
    category: str = ""
    subcategory: str = ""
    hint: str = ""

    def with_hint(self, message: str) -> str:
        """The failure message with the rule's hint after a blank line, as Armada's `AppendHint` does."""
        return f"{message}\n\n{self.hint}" if self.hint else message

    def event_fields(self) -> dict[str, str]:
        fields = {}
        if self.category:
            fields["failure_category"] = self.category
        if self.subcategory:
            fields["failure_subcategory"] = self.subcategory
        return fields


def internal(subcategory: str) -> dict[str, str]:
    """The fields of a failure Armada itself decided (a vanished pod, attempts used up, a rejection)."""
    return Classification(INTERNAL, subcategory).event_fields()


def _matches(rule: _Rule, failed: list[ContainerEnd], pod_reason: str, pod_error: str) -> bool:
    scoped = [c for c in failed if c.name == rule.containerName] if rule.containerName else failed
    if rule.onConditions:
        return any(
            any(c.reason == "OOMKilled" for c in scoped) if cond == "OOMKilled" else pod_reason == cond
            for cond in rule.onConditions
        )
    if rule.onExitCodes is not None:
        codes = rule.onExitCodes
        return any((c.exit_code in codes.values) == (codes.operator == "In") for c in scoped)
    if rule.onTerminationMessage is not None:
        pattern = re.compile(rule.onTerminationMessage.pattern)
        return any(c.message and pattern.search(c.message) for c in scoped)
    assert rule.onPodError is not None
    return bool(pod_error) and re.search(rule.onPodError.pattern, pod_error) is not None
