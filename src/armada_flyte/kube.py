"""Kubernetes' vocabulary: the rules for names, label keys and values, resource quantities, and
the well-known labels. Plain functions, no dependencies: the task side checks with them too.

Checked at the edges (task config, node-group file, cluster file) so a typo fails when it is
written, not as a pod the cluster refuses later. The objects built from these rules
(tolerations, taints, affinity expressions) are in `kube_objects`.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, localcontext
from typing import Any

ARCH_LABEL = "kubernetes.io/arch"
"""The well-known node label carrying a node's CPU architecture."""

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]|)$")

MAX_QUANTITY = Decimal(2**63 - 1)
"""Largest amount (in base units) of a quantity: "no quantity may represent a number greater than 2^63-1
in magnitude ... Numbers larger or more precise will be capped or rounded up" (resource.Quantity's
documentation, k8s.io/apimachinery/pkg/api/resource/quantity.go; `maxAllowed` in its math.go)."""
MAX_INT32 = 2**31 - 1
"""A container's exit code is an int32 (ContainerStateTerminated.exitCode; Armada's errorCategories too)."""
MAX_INT64 = 2**63 - 1
"""Kubernetes' integer fields (a toleration's tolerationSeconds, a Gt/Lt node-affinity value) are int64."""
_INT64_TEXT = re.compile(r"^[+-]?[0-9]{1,19}$")
_MAX_QUANTITY_TEXT = 64
_BINARY_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_DECIMAL_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("0.001"),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}


def _short(text: str) -> str:
    """`text` quoted for a message, cut where no valid name would reach."""
    return repr(text) if len(text) <= 80 else repr(text[:80]) + "..."


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a valid label key (`[prefix/]name`), or None if it is."""
    if not isinstance(key, str) or not key:
        return "a label key must be a non-empty string"
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return "the prefix before '/' must not be empty"
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return (
            f"prefix {_short(prefix)} must be a DNS subdomain (lower-case letters, digits, '-', '.'), "
            "at most 253 characters"
        )
    if len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return (
            f"name {_short(name)} must be at most 63 characters of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a valid label value, or None if it is."""
    if not isinstance(value, str):
        return "a label value must be a string"
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return (
            f"value {_short(value)} must be at most 63 characters of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit (or empty)"
        )
    return None


def label_value(value: str) -> str:
    """A string made safe as a Kubernetes label value (<= 63 chars, alphanumeric ends)."""
    return _LABEL_UNSAFE.sub("-", value)[:63].strip("-_.")


_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def secret_name_problem(name: str) -> str | None:
    """Why `name` can't name a Kubernetes Secret (a DNS subdomain), or None if it can."""
    if not isinstance(name, str) or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return (
            f"{name!r} must be at most 253 lower-case letters, digits, '-' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def secret_key_problem(key: str) -> str | None:
    """Why `key` can't be a key inside a Kubernetes Secret, or None if it can."""
    if not isinstance(key, str) or len(key) > 253 or not _SECRET_KEY.match(key):
        return f"{key!r} must be at most 253 letters, digits, '-', '_' or '.'"
    return None


def dns_label_problem(name: str) -> str | None:
    """Why `name` is not a DNS-1123 label (namespaces), or None if it is."""
    if not isinstance(name, str):
        return "a name must be a string of lower-case letters, digits or '-'"
    if len(name) > 63 or not _DNS1123_LABEL.match(name):
        return (
            f"{_short(name)} must be at most 63 lower-case letters, digits or '-', "
            "starting and ending with a letter or digit"
        )
    return None


def dns_subdomain_problem(name: str) -> str | None:
    """Why `name` is not a DNS-1123 subdomain (priority class names), or None if it is."""
    if not isinstance(name, str) or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return f"{name!r} must be at most 253 lower-case letters, digits, '-' or '.', starting and ending with one"
    return None


def int64_text_problem(text: str) -> str | None:
    """Why `text` is not an int64 in decimal (as Kubernetes parses a Gt/Lt node-affinity value), or None."""
    if not _INT64_TEXT.match(text) or not -MAX_INT64 - 1 <= int(text) <= MAX_INT64:
        return f"{_short(text)} must be a whole number from {-MAX_INT64 - 1} to {MAX_INT64} (Kubernetes' int64)"
    return None


def parse_quantity(value: str | int | float) -> Decimal:
    """A Kubernetes quantity ('500m', '2', '4Gi', '1e3') as a Decimal in base units, capped to
    +-`MAX_QUANTITY` as Kubernetes caps it; ValueError if malformed or not a finite number."""
    return _capped(_amount(value))


def quantity_in_range(value: str | int | float) -> Decimal:
    """Like `parse_quantity`, but an amount past Kubernetes' largest quantity is a ValueError naming the limit.

    For files an admin writes: Kubernetes would silently cap `cpu: 1e5000` to 2^63-1 cores, and no real
    node has that, so it is a typo to report, not a value to use."""
    amount = _amount(value)
    if amount.is_nan() or abs(amount) > MAX_QUANTITY:
        raise ValueError(
            f"it is past Kubernetes' largest quantity, 2^63-1 = {MAX_QUANTITY} of the unit "
            "(cores, bytes, devices); write the amount the nodes really have"
        )
    return amount


def _amount(value: str | int | float) -> Decimal:
    """The amount `value` writes, uncapped (may be +-Infinity past a Decimal's range); ValueError if malformed."""
    example = "(e.g. '500m', '2', '4Gi')"
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity {example}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite quantity {example}")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise ValueError(f"a {type(value).__name__} is not a Kubernetes quantity {example}")
    if len(value) > _MAX_QUANTITY_TEXT:
        raise ValueError(f"{value[:20]!r}... is longer than {_MAX_QUANTITY_TEXT} characters; write it as {example}")
    match = _QUANTITY.match(value.strip())
    if not match or match.group(1).count(".") > 1 or not any(c.isdigit() for c in match.group(1)):
        raise ValueError(f"{value!r} is not a Kubernetes quantity {example}")
    number, suffix = match.groups()
    with localcontext() as context:
        context.traps = {signal: False for signal in context.traps}  # overflow: Infinity
        base = Decimal(number)
        if suffix in _BINARY_SUFFIX:
            amount = base * _BINARY_SUFFIX[suffix]
        elif suffix in _DECIMAL_SUFFIX:  # before exponents: a lone "E" is exa (1E is 10^18)
            amount = base * Decimal(_DECIMAL_SUFFIX[suffix])
        else:
            exponent = int(suffix[1:])
            amount = (
                base.scaleb(exponent) if abs(exponent) < 10**6 else base.scaleb(10**6 if exponent > 0 else -(10**6))
            )
    return amount


def _capped(amount: Decimal) -> Decimal:
    if amount.is_nan():
        raise ValueError("NaN is not a quantity")
    return max(-MAX_QUANTITY, min(MAX_QUANTITY, amount))


MAX_MILLI = (2**63 - 1) * 1000
"""Kubernetes caps a quantity at 2^63-1 of its base unit ("numbers larger ... will be capped", resource.Quantity's
documentation); so does this, so an absurd amount (cpu "1e5000") stays a number the scheduler can compare."""


@functools.lru_cache(maxsize=4096)
def milli(quantity: str | int | float) -> int:
    """A Kubernetes quantity in thousandths, rounded up and capped as Kubernetes does; ValueError if malformed."""
    try:
        amount = parse_quantity(quantity) * 1000
    except ArithmeticError:  # an exponent past what a Decimal holds: capped like any other huge amount
        return MAX_MILLI if not str(quantity).strip().startswith("-") else -MAX_MILLI
    if not amount.is_finite():
        raise ValueError(f"{quantity!r} is not a Kubernetes quantity (e.g. '500m', '2', '4Gi')")
    return max(-MAX_MILLI, min(MAX_MILLI, math.ceil(amount)))


def format_milli(name: str, amount: int) -> str:
    """An amount in thousandths (`milli`'s answer) as Kubernetes prints it: `500m` or `4` cpu, `16Gi` memory,
    plain units otherwise."""
    if amount % 1000:
        return f"{amount}m"
    whole = amount // 1000
    if name != "cpu" and whole:
        for suffix, size in reversed(_BINARY_SUFFIX.items()):
            if whole % size == 0:
                return f"{whole // size}{suffix}"
    return str(whole)


def container_requests(container: Any) -> dict[str, int]:
    """A container's resource requests (armada_client's k8s proto) in thousandths, by resource name."""
    return {name: milli(q.string) for name, q in container.resources.requests.items()}
