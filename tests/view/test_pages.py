"""The view's HTML: pure renderings of gathered data, read back structurally with the standard library."""

from __future__ import annotations

from armada_flyte.view.jobs import JobRow, timeline
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
        timeline=timeline(rows, T0 + 4),
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
