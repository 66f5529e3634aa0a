"""A container's log as the kubelet endpoint answers the API server (kubectl logs, Binoculars)."""

from __future__ import annotations

import pytest

from armada_flyte.node_agent.container_logs import BadLogRequest, LogOptions, log_text
from armada_flyte.pod_runner.pod_log import LogLine

pytestmark = pytest.mark.pure

T = 1_796_637_600_000_000  # 2026-12-07T10:00:00Z in microseconds
LINES = [
    LogLine(T, "stdout", "first"),
    LogLine(T + 1_500_000, "note", "[armada-flyte dev] ran natively"),
    LogLine(T + 2_000_001, "stderr", "second"),
    LogLine(T + 3_000_000, "stdout", "third"),
]


def options(**query: str) -> LogOptions:
    return LogOptions.from_query({k: [v] for k, v in query.items()}, now_us=T + 4_000_000)


def test_the_log_is_the_containers_output_without_the_runners_notes():
    assert log_text(LINES, options()) == b"first\nsecond\nthird\n"


def test_timestamps_prefix_each_line_in_rfc3339_with_nanoseconds():
    """Binoculars always asks for them and splits each line at the first space."""
    first = log_text(LINES, options(timestamps="true")).splitlines()[1]
    assert first == b"2026-12-07T10:00:02.000001000Z second"


def test_tail_lines_keeps_the_last_ones():
    assert log_text(LINES, options(tailLines="2")) == b"second\nthird\n"


def test_since_time_and_since_seconds_keep_later_lines():
    assert log_text(LINES, options(sinceTime="2026-12-07T10:00:02.5Z")) == b"third\n"
    assert log_text(LINES, options(sinceSeconds="2")) == b"second\nthird\n"


def test_limit_bytes_cuts_the_answer():
    assert log_text(LINES, options(limitBytes="8")) == b"first\nse"


@pytest.mark.parametrize("query", [{"tailLines": "-1"}, {"limitBytes": "lots"}, {"sinceTime": "yesterday"}])
def test_a_bad_option_is_refused_naming_it(query):
    with pytest.raises(BadLogRequest, match=next(iter(query))):
        options(**query)
