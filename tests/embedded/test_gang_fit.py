"""Fitting a gang onto nodes: a fit is found whenever one exists, and "never" is only said when proven."""

from __future__ import annotations

import pytest

from armada_flyte.embedded.model.requirements import Requirements
from armada_flyte.embedded.scheduling.gang_fit import Verdict, fit_gang

pytestmark = pytest.mark.pure


def cpus(amount: int, selector: str = "") -> Requirements:
    return Requirements(node_selector=(("pool", selector),) if selector else (), resources=(("cpu", amount * 1000),))


def fit(members: list[Requirements], node_cpus: list[int], suitable=None, steps: int | None = None):
    capacity = {node: {"cpu": amount * 1000} for node, amount in enumerate(node_cpus)}
    everywhere = frozenset(capacity)
    return fit_gang(members, list(capacity), suitable or (lambda needs: everywhere), capacity.__getitem__, steps)


def loads(members: list[Requirements], nodes: list[int], node_count: int) -> list[int]:
    load = [0] * node_count
    for needs, node in zip(members, nodes):
        load[node] += dict(needs.resources)["cpu"] // 1000
    return load


def test_members_that_fit_only_largest_first_are_placed() -> None:
    members = [cpus(1), cpus(2)]
    result = fit(members, [2, 1])
    assert result.verdict == Verdict.FITS
    assert result.nodes == [1, 0]


def test_a_fit_that_needs_backtracking_is_found() -> None:
    members = [cpus(n) for n in (3, 2, 6, 5)]  # largest first, best fit: 6 and 3 fill the 9, then 5 and 2 miss the 7
    result = fit(members, [9, 7])
    assert result.verdict == Verdict.FITS
    assert all(load <= room for load, room in zip(loads(members, result.nodes, 2), [9, 7]))


def test_members_only_go_to_nodes_that_suit_them() -> None:
    members = [cpus(1, "a"), cpus(1, "b")]
    suits = {members[0]: frozenset({1}), members[1]: frozenset({0, 1})}
    result = fit(members, [2, 1], suitable=suits.__getitem__)
    assert result.verdict == Verdict.FITS and result.nodes == [1, 0]


def test_too_much_in_all_is_never() -> None:
    assert fit([cpus(2)] * 3, [2, 2]).verdict == Verdict.NEVER


def test_enough_in_all_but_in_the_wrong_pieces_is_never() -> None:
    assert fit([cpus(2)] * 3, [3, 3]).verdict == Verdict.NEVER


def test_a_search_out_of_steps_is_undecided_not_never() -> None:
    assert fit([cpus(n) for n in (3, 2, 6, 5)], [9, 7], steps=4).verdict == Verdict.UNDECIDED
