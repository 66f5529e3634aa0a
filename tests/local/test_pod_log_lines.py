"""Which lines of a pod's log a local run prints: the task's output and traceback, not a0's chatter."""

from __future__ import annotations

import pytest

from armada_flyte.local.pod_log_lines import PodLogLines

pytestmark = pytest.mark.pure

PAD = " " * 25
"""Flyte's console format indents a record's further lines under its message."""
FAILED_TASK_LOG = [
    "[flyte] WARNING Flyte runtime started for action a1 with run name r1",
    "squaring 4",
    "04:14:30.566706 ERROR    [r1]  taskrunner.py:129 - Task failed with error: four is unlucky      ",
    PAD + "Traceback (most recent call last):",
    PAD + '  File "/v/lib/python3.11/site-packages/flyte/_internal/runtime/taskrunner.py", line 121, in run_task',
    PAD + "    outputs = await task.execute(**inputs)",
    PAD + "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    PAD + '  File "/work/src/armada_flyte/task/plugin.py", line 54, in execute',
    PAD + "    return await super().execute(*args, **kwargs)",
    PAD + '  File "/tmp/dev/01m/opt/flyte/fanout.py", line 15, in square',
    PAD + '    raise ValueError("four is unlucky")',
    PAD + "ValueError: four is unlucky",
    '04:14:30.615015 ERROR     taskrunner.py:269 - Task arm.square failed with error: Error(err=code: "ValueError"',
    PAD + 'message: "four is unlucky"',
    PAD + "kind: USER",
    PAD + ", recoverable=True). Uploaded error to s3://flyte/raw/4d/error.pb",
    "04:14:30.628339 WARNING   runtime.py:338 - Flyte runtime completed for action a1 with run name r1",
]


def test_a_failed_tasks_log_shows_its_output_and_its_own_traceback_once() -> None:
    assert PodLogLines().shown(FAILED_TASK_LOG) == [
        "squaring 4",
        "Traceback (most recent call last):",
        '  File "/tmp/dev/01m/opt/flyte/fanout.py", line 15, in square',
        '    raise ValueError("four is unlucky")',
        "ValueError: four is unlucky",
    ]


def test_it_knows_when_it_printed_a_traceback() -> None:
    lines = PodLogLines()
    lines.shown(FAILED_TASK_LOG[:2])
    assert not lines.traceback_printed
    lines.shown(FAILED_TASK_LOG[2:])
    assert lines.traceback_printed


def test_lines_read_in_pieces_are_judged_as_in_one_piece() -> None:
    lines = PodLogLines()
    cuts = [0, 3, 4, 7, 13, len(FAILED_TASK_LOG)]
    shown = [line for start, end in zip(cuts, cuts[1:]) for line in lines.shown(FAILED_TASK_LOG[start:end])]
    assert shown == PodLogLines().shown(FAILED_TASK_LOG)


def test_the_tasks_own_indented_output_is_kept() -> None:
    assert PodLogLines().shown(["table:", "    a  1", "    b  2"]) == ["table:", "    a  1", "    b  2"]


def test_other_records_of_flytes_log_are_kept() -> None:
    record = "04:14:30.1 WARNING   foo.py:1 - something the user should see"
    assert PodLogLines().shown([record]) == [record]


def test_a_servers_note_is_printed_once_per_process() -> None:
    note = "[armada-flyte dev] node set arm64 is arm64 but this host is amd64 (test_pod_log_lines, once)"
    assert PodLogLines().shown([note, "out"]) == [note, "out"]
    assert PodLogLines().shown([note, "out"]) == ["out"]
