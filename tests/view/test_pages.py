"""The view's HTML: pure renderings of gathered data, read back structurally with the standard library."""

from __future__ import annotations

from dataclasses import replace

from armada_flyte.view.jobs import JobRow, run_timelines
from armada_flyte.view.pages import ARCHITECTURE_COLOURS, job_html, overview_html
from armada_flyte.view.snapshot import JobPage, JobSetSummary, Overview

from support.html_elements import Elements

T0 = 1_800_000_000.0
HOSTILE = '<script>alert("x")</script>'


def row(job_id: str, task: str, architecture: str, node: str, state: str, start: float, end: float) -> JobRow:
    return JobRow(
        job_id, "flyte", "run1", "default", task, architecture, "task", architecture, node, architecture,
        "embedded", state, "", T0, start, end,
    )  # fmt: skip


ROWS = [
    row("01a", "prepare", "amd64", "amd64-0", "SUCCEEDED", T0, T0 + 1),
    row("01b", "train", "arm64", "arm64-0", "SUCCEEDED", T0 + 1, T0 + 3),
    row("01c", "train", "arm64", "arm64-1", "RUNNING", T0 + 1, 0.0),
    row("01d", "train", "arm64", "", "QUEUED", 0.0, 0.0),
]


def overview(rows: list[JobRow] = ROWS, **changes) -> Overview:
    fields = dict(
        armada_url="127.0.0.1:50051",
        taken_at=T0 + 4,
        queues=["flyte", "idle"],
        job_sets=[JobSetSummary("flyte", "run1", {"QUEUED": 1, "RUNNING": 1, "SUCCEEDED": 2})],
        rows=rows,
        timelines=run_timelines(rows, T0 + 4),
        jobs_total=len(rows),
    )
    return Overview(**{**fields, **changes})


def test_every_job_is_a_row_with_its_state_architecture_and_node():
    page = Elements(overview_html(overview()))
    rows = [(r["data-job-id"], r["data-state"], r["data-architecture"], r["data-node"]) for r in page.with_class("job")]
    assert rows == [
        ("01a", "SUCCEEDED", "amd64", "amd64-0"),
        ("01b", "SUCCEEDED", "arm64", "arm64-0"),
        ("01c", "RUNNING", "arm64", "arm64-1"),
        ("01d", "QUEUED", "arm64", ""),
    ]


def test_every_node_is_a_lane_coloured_by_its_architecture_with_its_runs_as_bars():
    page = Elements(overview_html(overview()))
    lanes = [(lane["data-node"], lane["data-colour"]) for lane in page.with_class("lane")]
    assert lanes == [
        ("amd64-0", ARCHITECTURE_COLOURS["amd64"]),
        ("arm64-0", ARCHITECTURE_COLOURS["arm64"]),
        ("arm64-1", ARCHITECTURE_COLOURS["arm64"]),
    ]
    bars = {bar["data-job-id"]: bar["style"] for bar in page.with_class("bar")}
    assert set(bars) == {"01a", "01b", "01c"}  # the queued job holds no node
    assert "left:0.00%;width:25.00%" in bars["01a"]
    assert "left:25.00%;width:75.00%" in bars["01c"]  # running: up to now


def test_queues_list_their_job_sets_with_counts_by_state():
    page = overview_html(overview())
    assert 'data-queue="flyte" data-job-set="run1"' in page
    assert "1 queued, 1 running, 2 succeeded" in page
    assert "idle</b> <span" in page and "no job sets followed" in page


def test_values_from_armada_are_escaped():
    hostile = row(HOSTILE, HOSTILE, HOSTILE, HOSTILE, HOSTILE, T0, T0 + 1)
    page = overview_html(
        overview([hostile], queues=[HOSTILE], job_sets=[JobSetSummary(HOSTILE, HOSTILE, {HOSTILE: 1})])
    )
    assert "<script>" not in page
    assert "&lt;script&gt;" in page


def test_problems_reading_armada_are_shown_and_the_rest_still_renders():
    page = overview_html(overview(problems=["Armada GetQueues at 127.0.0.1:1 failed: UNAVAILABLE: down"]))
    assert "GetQueues at 127.0.0.1:1 failed: UNAVAILABLE" in page
    assert 'data-job-id="01a"' in page


def test_the_overview_says_when_it_shows_only_the_newest_jobs():
    assert "Jobs (4, the newest of 9000)" in overview_html(overview(jobs_total=9000))


def test_an_empty_armada_says_so():
    page = overview_html(overview([], queues=[], job_sets=[]))
    assert "No queues." in page and "No job has been placed on a node yet." in page and "No jobs" in page


def test_a_queued_jobs_page_says_why_it_waits_with_the_scheduler_report():
    page = job_html(
        JobPage(
            "127.0.0.1:50051",
            "01d",
            ROWS[3],
            {"containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]},
            [],
            "2 nodes of group arm64 are busy: the task needs 2 cpu, 0 is free",
            "default:\n\tUnschedulableReason: none\n",
        )
    )
    assert '<p class="queued-reason">2 nodes of group arm64 are busy' in page
    assert "UnschedulableReason: none" in page
    assert "(not placed on a node yet)" in page
    assert "cpu: &#x27;2&#x27;" in page  # the pod spec, as YAML


def test_a_placed_jobs_page_shows_its_log_and_no_queue_section():
    page = job_html(JobPage("127.0.0.1:50051", "01b", ROWS[1], None, ["epoch 1", HOSTILE], "", ""))
    assert '<pre class="log">epoch 1\n&lt;script&gt;' in page
    assert "Why it is queued" not in page
    assert "(none in the job&#x27;s details)" in page


def test_an_unknown_jobs_page_says_what_armada_said():
    page = job_html(JobPage("127.0.0.1:50051", "01zz", None, None, [], "", "", ["Armada does not know job 01zz"]))
    assert "Armada does not know job 01zz" in page
    assert "Log" not in page


def test_a_task_that_raised_reads_failed_with_armadas_state_beside_it():
    raised = replace(ROWS[1], outcome="FAILED ValueError", task_error="ValueError: four is unlucky")
    page = overview_html(overview([ROWS[0], raised]))
    (job,) = [r for r in Elements(page).with_class("job") if r["data-job-id"] == "01b"]
    assert (job["data-state"], job["data-outcome"]) == ("SUCCEEDED", "FAILED ValueError")
    assert '<span class="state" style="background:#b91c1c">FAILED ValueError</span>' in page
    assert '<span class="armada-state">Armada: SUCCEEDED</span>' in page
    assert "ValueError: four is unlucky" in page


def test_a_job_sets_counts_are_of_the_tasks_outcomes():
    page = overview_html(overview(job_sets=[JobSetSummary("flyte", "run1", {"FAILED": 2, "SUCCEEDED": 7})]))
    assert "2 failed, 7 succeeded" in page


def test_an_error_has_a_row_of_its_own_and_a_long_one_expands():
    long_error = "Container armada-task failed with exit code 137 because OOMKilled: " + "x" * 300 + "\nsecond line"
    failed = replace(ROWS[1], state="FAILED", error=long_error)
    page = Elements(overview_html(overview([failed])))
    (error_row,) = page.with_class("job-error")
    assert error_row["data-job-id"] == "01b"
    html = overview_html(overview([failed]))
    assert '<td class="error" colspan="11"><details class="problem"><summary>Container armada-task' in html
    assert "x" * 300 + "\nsecond line</pre></details>" in html


def test_a_failed_tasks_bar_is_marked():
    raised = replace(ROWS[1], outcome="FAILED ValueError")
    bars = {bar["data-job-id"]: bar for bar in Elements(overview_html(overview([ROWS[0], raised]))).with_class("bar")}
    assert bars["01b"]["class"] == "bar failed" and bars["01b"]["data-failed"] == "true"
    assert bars["01a"]["class"] == "bar" and bars["01a"]["data-failed"] == "false"


def test_a_spilled_job_links_to_its_successor_and_back():
    from armada_flyte.connector.poll.spill import SPILL_REASON

    cancelled = replace(ROWS[3], job_id="01s", state="CANCELLED", cancel_reason=SPILL_REASON, spilled_to="01b")
    moved = replace(ROWS[1], spilled_from="01s")
    page = overview_html(overview([cancelled, moved]))
    rows = {r["data-job-id"]: r for r in Elements(page).with_class("job")}
    assert rows["01s"]["data-spilled-to"] == "01b" and rows["01b"]["data-spilled-from"] == "01s"
    assert 'spilled: moved to <a href="/jobs/01b">01b</a>' in page
    assert 'took the place of <a href="/jobs/01s">01s</a> (spilled)' in page
    (bar,) = Elements(page).with_class("spilled")
    assert bar["data-spilled-from"] == "01s" and "took the place of job 01s" in bar["title"]


def test_each_run_has_a_timeline_of_its_own_the_latest_first():
    first = [replace(r, run="r1", submitted_at=T0) for r in ROWS[:2]]
    later = [
        replace(r, job_id=r.job_id + "x", run="r2", job_set="flyte-r2-prefer-ab", submitted_at=T0 + 60)
        for r in ROWS[:2]
    ]
    page = Elements(overview_html(overview(first + later)))
    sections = page.with_class("run-timeline")
    assert [s["data-run"] for s in sections] == ["r2", "r1"]
    assert sections[0]["data-job-sets"] == "flyte-r2-prefer-ab"


def test_a_job_cancelled_for_a_move_at_once_says_so_not_spilled():
    from armada_flyte.connector.poll.moves import QUEUED_MOVE_REASON

    cancelled = replace(ROWS[3], job_id="01q", state="CANCELLED", cancel_reason=QUEUED_MOVE_REASON, spilled_to="01b")
    moved = replace(ROWS[1], spilled_from="01q", moved_how="moved at once")
    page = overview_html(overview([cancelled, moved]))
    assert 'moved at once to <a href="/jobs/01b">01b</a>' in page and "spilled: moved to" not in page


def test_a_job_rejected_for_a_move_at_once_links_to_its_successor_and_says_so():
    rejected = replace(ROWS[3], job_id="01r", state="REJECTED", spilled_to="01b")
    moved = replace(ROWS[1], spilled_from="01r", moved_how="moved at once")
    page = overview_html(overview([rejected, moved]))
    assert 'moved at once to <a href="/jobs/01b">01b</a>' in page
    assert 'took the place of <a href="/jobs/01r">01r</a> (moved at once)' in page
