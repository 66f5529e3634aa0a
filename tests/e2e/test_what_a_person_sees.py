"""What a person sees on the console of a local run (issues 22 and 32): one real run in its own process, from
`local_stack()` to exit, with a task that prints, a retried task, a task that raises, a timeout, an OOM kill,
and two calls of one task at once on arm64: the tasks' output and tracebacks, one line per failure, no Flyte
runtime chatter, each note once, and one line naming the job set after the table."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.e2e

PROJECT = os.path.join(os.path.dirname(__file__), "project")
END = "=== the stack has stopped ==="

SCRIPT = textwrap.dedent(
    f"""
    import json, sys
    import flyte
    from armada_flyte.local.journal import print_jobs_table
    from armada_flyte.local.stack import local_stack

    sys.path.insert(0, {PROJECT!r})
    import journeys

    with local_stack() as stack:
        stack.init_flyte({PROJECT!r})
        run = flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path).run(journeys.journeys)
        outputs = run.outputs()
        print("RESULT " + json.dumps(outputs[0] if isinstance(outputs, tuple) else outputs), flush=True)
        print_jobs_table()
    print({END!r}, flush=True)
    """
)


@pytest.fixture(scope="module")
def console(tmp_path_factory) -> list[str]:
    """Every line the run printed, stdout and stderr in the order a terminal shows them."""
    folder = tmp_path_factory.mktemp("journeys")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=400,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400"},
    )
    assert done.returncode == 0, done.stdout
    return done.stdout.splitlines()


def _result(console: list[str]) -> dict[str, str]:
    return json.loads(next(line for line in console if line.startswith("RESULT "))[len("RESULT ") :])


def _table(console: list[str]) -> list[dict[str, str]]:
    """The jobs table's rows, cut at the header's column starts (a retried task's later attempts leave
    the task column blank)."""
    start = next(i for i, line in enumerate(console) if line.startswith("task "))
    header = console[start]
    names = header.split()
    starts = [header.index(name) for name in names] + [None]
    rows = [row for row in console[start + 2 : console.index(END)] if not row.startswith("Armada job set")]
    return [{n: row[a:b].strip() for n, a, b in zip(names, starts, starts[1:])} for row in rows]


def test_the_caller_sees_each_failure_by_kind_and_code(console):
    result = _result(console)
    assert (result["chatty"], result["flaky"], result["twin1"], result["twin2"]) == ("ok 2", "ok 1", "ok 1", "ok 2")
    assert result["broken"].startswith("RuntimeUserError ValueError: "), result
    assert result["slow"].startswith("RuntimeUserError TaskTimeout: "), result
    # Flyte raises its own OOMError for the code OOMKilled: the limit and what the task used come with it.
    assert result["hungry"].startswith("OOMError OOMKilled: "), result
    assert "went over the task's memory limit of 300Mi (it used " in result["hungry"], result


def test_the_table_says_each_tasks_outcome_with_armadas_state_where_it_differs(console):
    rows = [(row["task"], row["attempt"], row["state"]) for row in _table(console)]
    assert ("chatty", "0", "SUCCEEDED") in rows
    assert ("hungry", "0", "FAILED OOMKilled (Armada: FAILED)") in rows
    flaky = rows.index(("flaky", "0", "FAILED ValueError, retried (Armada: SUCCEEDED)"))
    assert rows[flaky + 1] == ("", "1", "SUCCEEDED"), rows  # the retry, listed under its task
    (slow,) = [row for row in rows if row[0] == "slow"]
    # Ended by the pod's deadline (FAILED) or by the connector's cancel (CANCELLED): a timeout either way.
    assert slow[2] in ("TIMED OUT (Armada: FAILED)", "TIMED OUT (Armada: CANCELLED)"), rows
    assert len(rows) == 8, rows


def test_each_calls_output_is_streamed_with_its_task_inputs_attempt_and_architecture(console):
    assert "[journeys.chatty(x=1)#0 amd64] chatty says hello 1" in console
    assert "[journeys.flaky(x=1)#0 amd64] flaky attempt 0" in console
    assert "[journeys.flaky(x=1)#1 amd64] flaky attempt 1" in console


def test_two_calls_of_one_task_at_once_have_names_of_their_own(console):
    assert "[journeys-arm.twin(x=1)#0 arm64] twin 1 here" in console
    assert "[journeys-arm.twin(x=2)#0 arm64] twin 2 here" in console


OWN_OUTPUT = re.compile(r"^\[[^\]]+#\d+ \w+\] (?!failed: |\[armada-flyte )")
"""A line of a task's pod log (its prints, its traceback), under its call's name."""


def _beyond_the_tasks_output(console: list[str]) -> list[str]:
    """Every line but the tasks' own output, the script's RESULT line, the table and the end marker."""
    start = next(i for i, line in enumerate(console) if line.startswith("task "))
    table = set(range(start, start + 2 + len(_table(console))))
    return [
        line
        for i, line in enumerate(console)
        if i not in table and not OWN_OUTPUT.match(line) and not line.startswith(("RESULT ", END))
    ]


def test_a_six_task_run_prints_at_most_three_lines_per_task_besides_their_output(console):
    """Issue 32's bound: 6 tasks (7 calls, a retry) print their output, the table, and at most 18 more lines."""
    beyond = _beyond_the_tasks_output(console)
    assert len(beyond) <= 3 * 6, "\n".join(beyond)


def test_flytes_runtime_notes_stay_off_the_console(console):
    assert not [line for line in console if "Flyte runtime" in line], console
    assert not [line for line in console if "failed on attempt" in line], console  # our failure line says it


def test_a_note_repeated_in_every_pod_log_is_printed_once(console):
    notes = [line for line in console if "this host is amd64" in line or "this host is arm64" in line]
    assert len(notes) <= 1, notes


def test_a_raised_error_is_printed_once_with_its_traceback_then_one_line(console):
    # the traceback's last line, and the RESULT line where the driver caught it
    assert sum("ValueError: broken on purpose" in line for line in console) == 2, console
    prefix = "[journeys.broken(x=1)#0 amd64] "
    traceback = [line for line in console if line.startswith(prefix) and not line.startswith(prefix + "failed: ")]
    assert traceback[0].endswith("Traceback (most recent call last):"), traceback
    assert traceback[-2].endswith('raise ValueError("broken on purpose")'), traceback
    assert not [line for line in traceback if "site-packages" in line or "armada_flyte" in line], traceback
    (failed,) = [line for line in console if line.startswith("[journeys.broken(x=1)#0 amd64] failed: ")]
    assert re.search(r"failed: ValueError in Armada job \w+ \(its traceback is above\)$", failed), failed


def test_a_retried_failure_says_it_is_retried(console):
    (failed,) = [line for line in console if line.startswith("[journeys.flaky(x=1)#0 amd64] failed: ")]
    assert failed.endswith("; Flyte retries it"), failed


def test_an_oom_kill_is_one_line_that_says_the_limit_once(console):
    (failed,) = [line for line in console if line.startswith("[journeys-tight.hungry(x=1)#0 amd64] failed: ")]
    assert failed.count("memory limit") == 1 and "Container " not in failed and "bytes" not in failed, failed
    assert not [line for line in console if "counting its files" in line and not line.startswith("RESULT ")]


def test_after_the_run_only_the_table_and_one_line_naming_the_job_set(console):
    table_end = console.index(END)
    result = next(i for i, line in enumerate(console) if line.startswith("RESULT "))
    after = console[result + 1 : table_end]
    assert after[0].startswith("task ") and len(after) == 3 + len(_table(console)), after
    assert re.match(r"Armada job set flyte-[\w-]+ \(queue flyte, at 127\.0\.0\.1:\d+\): ", after[-1]), after
    assert console[table_end + 1 :] == [], console[table_end:]
    assert not [line for line in console if "unavailable" in line], console


def test_concurrent_first_calls_bundle_the_code_once(console):
    assert sum("Bundling code" in line for line in console) == 1, console
