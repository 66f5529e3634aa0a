"""A pod's log is capped in bytes: the newest lines stay, however long the lines are."""

from __future__ import annotations

import pytest

from armada_flyte.pod_runner.pod_log import PodLog

pytestmark = pytest.mark.pure


def test_the_log_keeps_its_newest_lines_within_the_byte_cap() -> None:
    log = PodLog(max_bytes=1000)
    for n in range(100):
        log.write("stdout", f"{n:03d}" + "x" * 97)  # 100 bytes a line
    texts = log.texts()
    assert len(texts) == 10 and texts[-1].startswith("099") and texts[0].startswith("090")


def test_a_few_huge_lines_are_capped_as_surely_as_many_short_ones() -> None:
    log = PodLog(max_bytes=10_000)
    for _ in range(50):
        log.write("stdout", "y" * 5_000)
    assert sum(len(t) for t in log.texts()) <= 10_000
