"""What a person sees on the console of a local run (issue 22): one real run in its own process, from
`local_stack()` to exit, with a task that prints, a retried task, a timeout and an OOM kill."""

from __future__ import annotations

import json
import os
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
    rows = console[start + 2 : console.index(END)]
    return [{n: row[a:b].strip() for n, a, b in zip(names, starts, starts[1:])} for row in rows]


def test_the_caller_sees_each_failure_by_kind_and_code(console):
    result = _result(console)
    assert (result["chatty"], result["flaky"]) == ("ok 2", "ok 1")
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
    assert len(rows) == 5, rows


def test_each_tasks_output_is_streamed_with_its_task_and_attempt(console):
    assert "[journeys.chatty#0] chatty says hello 1" in console
    assert "[journeys.flaky#0] flaky attempt 0" in console
    assert "[journeys.flaky#1] flaky attempt 1" in console


def test_nothing_is_printed_after_the_run_but_the_table(console):
    table_end = console.index(END)
    result = next(i for i, line in enumerate(console) if line.startswith("RESULT "))
    after = console[result + 1 : table_end]
    assert after[0].startswith("task ") and len(after) == 2 + len(_table(console)), after
    assert console[table_end + 1 :] == [], console[table_end:]
    assert not [line for line in console if "unavailable" in line], console


def test_concurrent_first_calls_bundle_the_code_once(console):
    assert sum("Bundling code" in line for line in console) == 1, console
