"""The fan-out benchmark through a real c0: every task created is counted once its job is QUEUED at the
server, and the figure says so (a small fan-out; the benchmark's own figures are taken with 2,000)."""

from __future__ import annotations

from support.benchmark_runs import run_benchmark


def test_a_small_fan_out_reaches_queued_for_every_task() -> None:
    result = run_benchmark("bench_fan_out.py", "--tasks", "60", "--concurrent", "20")
    assert (result["failed_creates"], result["queued"], result["all_queued"]) == (0, 60, True), result
    assert result["seconds_to_last_create"] > 0 and result["seconds_to_last_queued"] > 0, result
