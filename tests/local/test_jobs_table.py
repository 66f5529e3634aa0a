"""The end-of-run jobs table: the task's outcome first, Armada's state where it differs, retries under their task."""

from __future__ import annotations

import pytest

from armada_flyte.local.journal import JobRecord, architecture_label, format_jobs_table, outcome_label


def _job(task: str, outcome: str, armada: str, attempt: int = 0, call: str = "") -> JobRecord:
    job_id = f"j-{task}-{attempt}"
    return JobRecord(task, "amd64", "task", "amd64", "amd64-0", outcome, armada, 1.5, job_id, call, attempt)


@pytest.mark.parametrize(
    "succeeded, code, cancelled, label",
    [
        (True, "", False, "SUCCEEDED"),
        (False, "ValueError", False, "FAILED ValueError"),
        (False, "OOMKilled", False, "FAILED OOMKilled"),
        (False, "TaskTimeout", True, "TIMED OUT"),
        (False, "", True, "CANCELLED"),
        (False, "", False, "FAILED"),
    ],
)
def test_the_outcome_is_named_for_what_happened_to_the_task(succeeded, code, cancelled, label):
    assert outcome_label(succeeded, code, cancelled) == label


def test_rows_show_the_outcome_armadas_state_where_it_differs_and_retries_under_their_task():
    table = format_jobs_table(
        [
            _job("flaky", "FAILED ValueError", "SUCCEEDED", 0, call="c1"),
            _job("plain", "SUCCEEDED", "SUCCEEDED", 0, call="c2"),
            _job("flaky", "SUCCEEDED", "SUCCEEDED", 1, call="c1"),
        ]
    )
    lines = table.splitlines()
    header = ["task", "attempt", "architecture", "from", "node", "group", "node", "state", "seconds", "job", "id"]
    assert lines[0].split() == header
    rows = [line.split("  ") for line in lines[2:]]
    cells = [[cell.strip() for cell in row if cell.strip()] for row in rows]
    assert cells[0][:2] == ["flaky", "0"] and "FAILED ValueError, retried (Armada: SUCCEEDED)" in cells[0]
    assert lines[3].startswith(" ") and cells[1][0] == "1" and "SUCCEEDED" in cells[1]
    assert cells[2][:2] == ["plain", "0"] and "(Armada:" not in lines[4]


def test_each_row_ends_with_its_job_id():
    """The id `armada-flyte logs` and armadactl take."""
    table = format_jobs_table([_job("plain", "SUCCEEDED", "SUCCEEDED", 0, call="c1")])
    assert table.splitlines()[2].endswith(" j-plain-0")


def test_the_architecture_says_how_it_was_chosen():
    assert architecture_label("amd64", spilled_from="arm64") == "amd64 (spilled from arm64)"
    assert architecture_label("amd64", moved_from="arm64") == "amd64 (moved from arm64)"
    assert architecture_label("amd64", spilled_from="arm64", moved_from="arm64") == "amd64 (spilled from arm64)"
    assert architecture_label("arm64", any_of="amd64,arm64") == "arm64 (any)"
    assert architecture_label("arm64") == "arm64"
