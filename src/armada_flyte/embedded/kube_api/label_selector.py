"""Kubernetes label selectors as the API server reads them from `?labelSelector=`.

The grammar of k8s.io/apimachinery/pkg/labels/selector.go: requirements separated by commas,
each `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)` or
`key notin (a,b)`. A `!=` or `notin` requirement also matches objects without the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from armada_flyte.kube import label_key_problem, label_value_problem


class BadSelector(ValueError):
    """The selector does not parse; the API answers 400 with this message, as Kubernetes does."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        test = _OPERATORS[self.operator]
        return test(labels.get(self.key), self.values)


_OPERATORS: dict[str, Callable[[str | None, frozenset[str]], bool]] = {
    "exists": lambda value, _: value is not None,
    "!": lambda value, _: value is None,
    "in": lambda value, values: value in values,
    "notin": lambda value, values: value not in values,
}
_SET = re.compile(r"^\s*(?P<key>[^\s=!,()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*(?P<key>[^\s=!,()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s=!,()]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<not>!?)\s*(?P<key>[^\s=!,()]+)\s*$")


def parse_selector(text: str) -> tuple[Requirement, ...]:
    """The requirements of `text` (all must match); an empty selector matches everything."""
    requirements = []
    for part in _split(text):
        requirements.append(_requirement(part))
    return tuple(requirements)


def matches(requirements: tuple[Requirement, ...], labels: Mapping[str, str]) -> bool:
    return all(r.matches(labels) for r in requirements)


def _split(text: str) -> list[str]:
    """Split on the commas outside parentheses."""
    parts, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if "".join(current).strip() or parts:
        parts.append("".join(current))
    return parts


def _requirement(part: str) -> Requirement:
    if match := _SET.match(part):
        values = [v.strip() for v in match["values"].split(",")]
        return _checked(match["key"], match["op"], values, part)
    if match := _EQUALITY.match(part):
        operator = "notin" if match["op"] == "!=" else "in"
        return _checked(match["key"], operator, [match["value"]], part)
    if match := _EXISTS.match(part):
        return _checked(match["key"], "!" if match["not"] else "exists", [], part)
    raise BadSelector(f"unable to parse requirement: {part.strip()!r}")


def _checked(key: str, operator: str, values: list[str], part: str) -> Requirement:
    if problem := label_key_problem(key):
        raise BadSelector(f"unable to parse requirement: {part.strip()!r}: {problem}")
    for value in values:
        if problem := label_value_problem(value):
            raise BadSelector(f"unable to parse requirement: {part.strip()!r}: {problem}")
    return Requirement(key, operator, frozenset(values))
