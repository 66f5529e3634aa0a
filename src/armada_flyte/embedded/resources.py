"""Resource amounts as whole thousandths (Kubernetes' MilliValue), so fitting is exact integer maths."""

from __future__ import annotations

import functools
import math
from typing import Iterable, Mapping

from armada_flyte.kube import parse_quantity

Resources = Mapping[str, int]
"""Resource name -> amount in thousandths of its base unit (millicores, millibytes)."""

_BINARY_UNITS = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


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


def fits(required: Iterable[tuple[str, int]], free: Mapping[str, int]) -> bool:
    return all(free.get(name, 0) >= amount for name, amount in required)


def first_shortfall(required: Iterable[tuple[str, int]], free: Mapping[str, int]) -> tuple[str, int, int] | None:
    """The first resource `free` can't cover, as (name, required, available), or None."""
    for name, amount in required:
        available = free.get(name, 0)
        if available < amount:
            return name, amount, available
    return None


def subtract(free: dict[str, int], used: Iterable[tuple[str, int]]) -> None:
    for name, amount in used:
        free[name] = free.get(name, 0) - amount


def add(free: dict[str, int], released: Iterable[tuple[str, int]]) -> None:
    for name, amount in released:
        free[name] = free.get(name, 0) + amount


def format_amount(name: str, amount: int) -> str:
    """An amount as Kubernetes prints it: `500m` or `4` cpu, `16Gi` memory, plain units otherwise."""
    if amount % 1000:
        return f"{amount}m"
    whole = amount // 1000
    if name != "cpu" and whole:
        for suffix, size in _BINARY_UNITS:
            if whole % size == 0:
                return f"{whole // size}{suffix}"
    return str(whole)
