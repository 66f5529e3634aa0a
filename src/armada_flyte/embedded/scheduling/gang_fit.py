"""Fitting all members of a gang onto nodes at once, by a search that finds a fit when one exists.

Placing members first-fit in submit order misses fits: on nodes of 2 and 1 cpu, members of 1
and 2 cpu fit, but the 1-cpu member takes the 2-cpu node and the other has nowhere to go. So
members go largest first, each to the node it fills best, and the search backtracks when a
member has nowhere to go. Nodes a member can't tell apart (same free resources, suitable for
the same members) are tried once. The search stops after a bounded number of steps; then it
can't say whether the gang fits, and callers must treat the gang as one that might.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Optional, Sequence

from armada_flyte.embedded.model.requirements import Requirements
from armada_flyte.embedded.model.resources import add, fits, subtract

SEARCH_STEPS = 20_000
"""How many tentative placements one search may make before it gives up undecided."""


class Verdict(enum.Enum):
    FITS = "fits"
    NEVER = "never"
    """Proven: no assignment of members to these nodes fits."""
    UNDECIDED = "undecided"
    """The search ran out of steps: the gang may or may not fit."""


@dataclass(frozen=True)
class GangFit:
    verdict: Verdict
    nodes: Optional[list[int]] = None
    """With FITS: the node of each member, in the order the members were given."""


def fit_gang(
    members: Sequence[Requirements],
    nodes: Iterable[int],
    suitable: Callable[[Requirements], frozenset[int]],
    capacity: Callable[[int], Mapping[str, int]],
    steps: Optional[int] = None,
) -> GangFit:
    """Where each member goes among `nodes` (each with `capacity(node)` free), or why it can't say.

    `suitable(needs)` gives the nodes whose labels, taints and affinity accept `needs`; `steps`
    bounds the search (default `SEARCH_STEPS`).
    """
    steps = SEARCH_STEPS if steps is None else steps
    distinct = list(dict.fromkeys(members))
    usable = {kind: suitable(kind) for kind in distinct}
    pool = [n for n in nodes if any(n in usable[kind] for kind in distinct)]
    free = {n: dict(capacity(n)) for n in pool}
    if not members:
        return GangFit(Verdict.FITS, [])
    if _demand_exceeds_supply(members, distinct, usable, free):
        return GangFit(Verdict.NEVER)
    scale = _scale(free)
    order = sorted(range(len(members)), key=lambda i: _size_rank(members[i], scale, distinct), reverse=True)

    def candidates(needs: Requirements) -> list[int]:
        """Nodes with room for `needs`, one per kind of node, best fit last (they are popped)."""
        seen, found = set(), []
        for node in pool:
            if node not in usable[needs] or not fits(needs.resources, free[node]):
                continue
            kind = (tuple(sorted(free[node].items())), tuple(node in usable[k] for k in distinct))
            if kind not in seen:
                seen.add(kind)
                found.append(node)
        found.sort(key=lambda node: _slack_after(needs, free[node], scale), reverse=True)
        return found

    placed: list[Optional[int]] = [None] * len(order)
    choices: list[list[int]] = [candidates(members[order[0]])] + [[] for _ in order[1:]]
    depth, taken = 0, 0
    while depth >= 0:
        needs = members[order[depth]]
        previous = placed[depth]
        if previous is not None:
            add(free[previous], needs.resources)
            placed[depth] = None
        if not choices[depth]:
            depth -= 1
            continue
        if taken == steps:
            return GangFit(Verdict.UNDECIDED)
        taken += 1
        node = choices[depth].pop()
        subtract(free[node], needs.resources)
        placed[depth] = node
        if depth + 1 == len(order):
            result = [0] * len(order)
            for position, member in enumerate(order):
                result[member] = placed[position]  # type: ignore[call-overload]
            return GangFit(Verdict.FITS, result)
        depth += 1
        choices[depth] = candidates(members[order[depth]])
    return GangFit(Verdict.NEVER)


def _demand_exceeds_supply(
    members: Sequence[Requirements],
    distinct: list[Requirements],
    usable: Mapping[Requirements, frozenset[int]],
    free: Mapping[int, Mapping[str, int]],
) -> bool:
    """A quick proof of "never": members of one kind ask for more of a resource than their nodes have in all."""
    for kind in distinct:
        count = sum(1 for m in members if m == kind)
        for name, amount in kind.resources:
            supply = sum(free[n].get(name, 0) for n in free if n in usable[kind])
            if amount * count > supply:
                return True
    return False


def _scale(free: Mapping[int, Mapping[str, int]]) -> dict[str, int]:
    """Each resource's total over the nodes, so amounts of different resources compare as shares."""
    total: dict[str, int] = {}
    for resources in free.values():
        add(total, resources.items())
    return {name: amount or 1 for name, amount in total.items()}


def _share(name: str, amount: int, scale: Mapping[str, int]) -> float:
    return amount / scale.get(name, 1)


def _size_rank(needs: Requirements, scale: Mapping[str, int], distinct: list[Requirements]) -> tuple[float, float, int]:
    """Largest first: by dominant share, then total share; equal members stay together."""
    shares = [_share(name, amount, scale) for name, amount in needs.resources]
    return (max(shares, default=0.0), sum(shares), -distinct.index(needs))


def _slack_after(needs: Requirements, free: Mapping[str, int], scale: Mapping[str, int]) -> float:
    """What the node would have left, as a sum of shares: the best fit leaves least."""
    left = dict(free)
    subtract(left, needs.resources)
    return sum(_share(name, amount, scale) for name, amount in left.items())
