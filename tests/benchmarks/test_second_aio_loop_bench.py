"""The second-loop benchmark runs end to end through two real c0: every create of both answered, and the JSON
carries both figures (a small run; the benchmark's own figures are taken with 1,000 creates a round)."""

from __future__ import annotations

from support.benchmark_runs import run_benchmark


def test_a_small_run_answers_every_create_in_both_c0() -> None:
    result = run_benchmark("bench_second_aio_loop.py", "--creates", "50", "--rounds", "2")
    assert result["failed_creates"] == 0, result
    assert all(rate > 0 for rate in result["creates_per_second"].values()), result
    rounds = {name: len(seen["rate"]) for name, seen in result["rounds_detail"].items()}
    assert rounds == {"one_loop": 2, "second_loop": 2}, result
