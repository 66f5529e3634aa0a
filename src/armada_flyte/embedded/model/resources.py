"""Resource amounts as whole thousandths (Kubernetes' MilliValue), so fitting is exact integer maths."""

from __future__ import annotations

from typing import Iterable, Mapping

Resources = Mapping[str, int]
"""Resource name -> amount in thousandths of its base unit (millicores, millibytes)."""


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
