"""What a local run prints besides the tasks' output: call names, one-line failures, the run's job sets."""

from __future__ import annotations

import logging

import pytest

from armada_flyte.local.console import CallName, CallNumbers, QuietFlyte, call_label, headline, reported, summary_line

pytestmark = pytest.mark.pure


def test_a_call_is_named_by_its_task_inputs_attempt_and_architecture() -> None:
    assert str(CallName("arm.square", call_label(3, {"x": 4}), 0, "arm64")) == "[arm.square(x=4)#0 arm64]"


def test_long_or_structured_inputs_name_the_call_by_its_index() -> None:
    assert call_label(3, {"data": [1, 2, 3]}) == ":3"
    assert call_label(2, {"text": "x" * 40}) == ":2"


def test_calls_are_numbered_per_task_and_attempts_per_call() -> None:
    numbers = CallNumbers()
    assert numbers.next("t", "out/a") == (0, 0)
    assert numbers.next("t", "out/b") == (1, 0)
    assert numbers.next("u", "out/c") == (0, 0)
    assert numbers.next("t", "out/a") == (0, 1)  # Flyte's retry of the first call


def test_a_failures_headline_leaves_armadas_per_container_reason_to_the_view() -> None:
    message = (
        "OOMKilled: Armada job j on node n went over the task's memory limit of 300Mi (it used 301Mi): Container "
        "armada-task failed with exit code 137 because OOMKilled: went over its memory limit (314572800 bytes)\n"
        "container armada-task was OOMKilled: ..."
    )
    assert headline(message) == (
        "OOMKilled: Armada job j on node n went over the task's memory limit of 300Mi (it used 301Mi)"
    )


def _record(message: str, error: Exception | None = None, level: int = logging.ERROR) -> logging.LogRecord:
    exc_info = (type(error), error, None) if error else None
    return logging.LogRecord("flyte", level, "taskrunner.py", 1, message, (), exc_info)


def test_flytes_runtime_notes_and_reported_failures_are_demoted_to_debug() -> None:
    quiet = QuietFlyte()
    chatter = _record("Flyte runtime started for action a1 with run name r", level=logging.WARNING)
    assert not quiet.filter(chatter) and chatter.levelno == logging.DEBUG
    reported.add("task t failed: ValueError: printed already (test_console)")
    failure = _record(
        "Task failed with error: ...", RuntimeError("task t failed: ValueError: printed already (test_console)")
    )
    assert not quiet.filter(failure)


def test_other_records_pass() -> None:
    assert QuietFlyte().filter(_record("Task failed with error: x", RuntimeError("not ours (test_console)")))


def test_the_summary_names_the_job_set_and_where_to_look() -> None:
    line = summary_line([("127.0.0.1:50051", "flyte", "flyte-r1")])
    assert line.startswith("Armada job set flyte-r1 (queue flyte, at 127.0.0.1:50051): ")
    assert "armada-flyte view --armada 127.0.0.1:50051 --job-set flyte/flyte-r1" in line
    assert "armada-flyte logs --armada 127.0.0.1:50051 JOB_ID" in line


def test_the_summary_gives_the_views_address_when_one_serves() -> None:
    line = summary_line([("127.0.0.1:1", "flyte", "flyte-r1")], view_url="http://127.0.0.1:8080/")
    assert line.endswith("see the jobs in the view at http://127.0.0.1:8080/")


def test_preference_job_sets_are_counted_under_their_runs() -> None:
    sets = [
        ("a:1", "flyte", "flyte-r1"),
        ("a:1", "flyte", "flyte-r1-prefer-ab12"),
        ("a:1", "flyte", "flyte-r1-prefer-cd34"),
    ]
    line = summary_line(sets)
    assert "flyte-r1 and 2 of its preference tasks' job sets (flyte-r1-prefer-*)" in line


def test_nothing_pending_says_nothing() -> None:
    assert summary_line([]) == ""
