"""What the view says about each job, and the timeline's lanes: pure functions of Armada's answers."""

from __future__ import annotations

from armada_client.armada import job_pb2, submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from google.protobuf.timestamp_pb2 import Timestamp

from armada_flyte.armada_names import JobState
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.view.jobs import JobRow, job_row, link_spills, pod_spec_of, run_timelines, timeline
from armada_flyte.view.snapshot import node_group_finder

from support.pods import pod

T0 = 1_800_000_000.0


def _ts(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


def details(
    job_id: str = "01job",
    *,
    state: int = JobState.SUCCEEDED,
    labels: dict | None = None,
    annotations: dict | None = None,
    spec: core.PodSpec | None = None,
    node: str = "",
    started: float = 0.0,
    finished: float = 0.0,
) -> job_pb2.JobDetails:
    job = submit_pb2.Job(id=job_id, labels=labels or {}, annotations=annotations or {})
    if spec is not None:
        job.pod_spec.CopyFrom(spec)
    message = job_pb2.JobDetails(job_id=job_id, queue="flyte", jobset="run1", namespace="default", state=state)
    message.submitted_ts.CopyFrom(_ts(T0))
    message.job_spec.CopyFrom(job)
    if node:
        run = job_pb2.JobRunDetails(run_id=f"{job_id}-run", job_id=job_id, cluster="embedded", node=node)
        run.leased_ts.CopyFrom(_ts(started - 0.5))
        run.started_ts.CopyFrom(_ts(started))
        if finished:
            run.finished_ts.CopyFrom(_ts(finished))
        message.job_runs.append(run)
        message.latest_run_id = run.run_id
    return message


CONNECTOR_TRAIN = {
    "labels": {"armada-flyte.io/architecture": "arm64"},
    "annotations": {
        "armada-flyte.io/task": "multiarch.train",
        "armada-flyte.io/architecture-source": "task",
        "armada-flyte.io/node-group": "arm64",
    },
}


def test_a_connector_job_reads_task_architecture_source_and_node_group_from_its_metadata():
    row = job_row(details(node="arm64-1", started=T0 + 1, finished=T0 + 3.5, **CONNECTOR_TRAIN))
    assert (row.task, row.architecture, row.source, row.node_group) == ("multiarch.train", "arm64", "task", "arm64")
    assert (row.node, row.cluster, row.state, row.node_architecture) == ("arm64-1", "embedded", "SUCCEEDED", "arm64")
    assert row.seconds == 2.5


def test_a_plain_armada_job_takes_its_architecture_from_the_pod_spec_node_selector():
    row = job_row(details(spec=pod(node_selector={"kubernetes.io/arch": "amd64"}), node="amd64-0", started=T0))
    assert (row.task, row.architecture, row.source, row.node_group) == ("", "amd64", "pod spec", "")
    assert row.seconds is None  # still running: no end yet


def test_a_job_with_no_architecture_anywhere_says_none():
    row = job_row(details(spec=pod()))
    assert (row.architecture, row.source, row.node, row.started_at) == ("", "", "", 0.0)


def test_an_any_job_shows_the_architecture_its_node_belongs_to():
    finder = node_group_finder(NodeGroups.preset("embedded"))
    annotations = {"armada-flyte.io/architectures": "amd64,arm64", "armada-flyte.io/architecture-source": "task"}
    labels = {"armada-flyte.io/architecture": "any"}
    row = job_row(details(labels=labels, annotations=annotations, node="arm64-0", started=T0), "", finder)
    assert (row.architecture, row.node_group, row.node_architecture) == ("arm64 (any)", "arm64", "arm64")
    assert job_row(details(labels=labels, annotations=annotations)).architecture == "any"


def test_the_outcome_is_armadas_state_and_error_text():
    row = job_row(details(state=JobState.FAILED), "Container main failed with exit code 3")
    assert (row.state, row.error) == ("FAILED", "Container main failed with exit code 3")


def test_the_pod_spec_reads_as_kubernetes_writes_it():
    job = submit_pb2.Job(pod_specs=[pod(cpu="2", node_selector={"kubernetes.io/arch": "arm64"})])
    spec = pod_spec_of(job)
    assert spec["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "2", "memory": "64Mi"}
    assert pod_spec_of(submit_pb2.Job()) is None


def _row(job_id: str, node: str, architecture: str, start: float, end: float = 0.0) -> JobRow:
    return JobRow(
        job_id, "flyte", "run1", "default", job_id, architecture, "task", architecture, node, architecture,
        "embedded", "SUCCEEDED" if end else "RUNNING", "", T0, start, end,
    )  # fmt: skip


def test_the_timeline_has_one_lane_per_node_sorted_with_bars_placed_in_time():
    rows = [
        _row("train-a", "arm64-1", "arm64", T0 + 2, T0 + 6),
        _row("prepare", "amd64-0", "amd64", T0, T0 + 2),
        _row("train-b", "arm64-0", "arm64", T0 + 2),
        _row("queued", "", "arm64", 0.0),
    ]
    line = timeline(rows, now=T0 + 10)
    assert [(lane.node, lane.architecture) for lane in line.lanes] == [
        ("amd64-0", "amd64"),
        ("arm64-0", "arm64"),
        ("arm64-1", "arm64"),
    ]
    assert (line.begin, line.end) == (T0, T0 + 10)
    prepare, running, train_a = line.lanes[0].bars[0], line.lanes[1].bars[0], line.lanes[2].bars[0]
    assert (prepare.start, prepare.end) == (0.0, 0.2)
    assert (running.start, running.end) == (0.2, 1.0)  # still running: it reaches now
    assert (train_a.start, train_a.end) == (0.2, 0.6)


def test_runs_that_overlap_on_one_node_get_rows_of_their_own():
    rows = [
        _row("a", "amd64-0", "amd64", T0, T0 + 4),
        _row("b", "amd64-0", "amd64", T0 + 1, T0 + 2),
        _row("c", "amd64-0", "amd64", T0 + 3, T0 + 5),
    ]
    (lane,) = timeline(rows, now=T0 + 5).lanes
    assert [(bar.job_id, bar.slot) for bar in lane.bars] == [("a", 0), ("b", 1), ("c", 1)]
    assert lane.slots == 2


def test_a_node_that_ran_two_architectures_has_no_lane_architecture():
    rows = [_row("a", "n-0", "amd64", T0, T0 + 1), _row("b", "n-0", "arm64", T0 + 1, T0 + 2)]
    assert timeline(rows, now=T0 + 2).lanes[0].architecture == ""


def test_no_placed_job_means_no_lanes():
    assert timeline([_row("queued", "", "arm64", 0.0)], now=T0).lanes == ()


def test_a_task_a0_recorded_an_error_for_reads_failed_beside_armadas_succeeded():
    from armada_flyte.connector.model.task_error import TaskError

    row = job_row(details(), task_error=TaskError("ValueError", "four is unlucky", "user", True))
    assert (row.state, row.outcome, row.shown_state) == ("SUCCEEDED", "FAILED ValueError", "FAILED ValueError")
    assert row.task_error == "ValueError: four is unlucky" and row.failed


def test_a_task_a0_recorded_no_error_for_succeeded_and_an_unread_one_shows_armadas_state():
    assert job_row(details(), task_error=None).outcome == "SUCCEEDED"
    unread = job_row(details())
    assert unread.outcome == "" and unread.shown_state == "SUCCEEDED" and not unread.failed


def test_the_run_is_the_flyte_run_label():
    row = job_row(details(labels={"flyte.org/run": "r-42", **CONNECTOR_TRAIN["labels"]}))
    assert row.run == "r-42"


def test_a_job_cancelled_to_spill_is_linked_to_the_next_job_of_its_task_in_its_job_set():
    from dataclasses import replace

    from armada_flyte.connector.poll.spill import SPILL_REASON

    base = job_row(details(annotations=CONNECTOR_TRAIN["annotations"]))
    spilled = replace(base, job_id="01a", state="CANCELLED", cancel_reason=SPILL_REASON, submitted_at=T0)
    other_task = replace(base, job_id="01b", task="other", submitted_at=T0 + 1)
    successor = replace(base, job_id="01c", submitted_at=T0 + 2)
    rows = {r.job_id: r for r in link_spills([spilled, other_task, successor])}
    assert rows["01a"].spilled_to == "01c" and rows["01c"].spilled_from == "01a"
    assert rows["01b"].spilled_from == "" and rows["01b"].spilled_to == ""


def test_a_job_cancelled_for_another_reason_is_no_spill():
    from dataclasses import replace

    base = job_row(details(annotations=CONNECTOR_TRAIN["annotations"]))
    cancelled = replace(base, job_id="01a", state="CANCELLED", cancel_reason="by hand", submitted_at=T0)
    rows = link_spills([cancelled, replace(base, job_id="01c", submitted_at=T0 + 2)])
    assert [r.spilled_to for r in rows] == ["", ""]


def test_each_run_gets_a_timeline_spanning_its_own_jobs_the_latest_first():
    from dataclasses import replace

    early = job_row(details("01e", node="amd64-0", started=T0, finished=T0 + 2))
    late = job_row(details("01l", node="amd64-0", started=T0 + 600, finished=T0 + 602))
    early, late = replace(early, run="early"), replace(late, run="late", submitted_at=T0 + 599)
    timelines = run_timelines([early, late], now=T0 + 700)
    assert [t.run for t in timelines] == ["late", "early"]
    assert [(t.timeline.begin, t.timeline.end) for t in timelines] == [(T0 + 600, T0 + 602), (T0, T0 + 2)]


def test_jobs_of_no_run_are_grouped_by_job_set():
    one = job_row(details("01a", node="amd64-0", started=T0, finished=T0 + 1))
    (group,) = run_timelines([one], now=T0 + 5)
    assert (group.run, group.job_sets) == ("", ("run1",))


def test_a_job_rejected_or_failed_in_a_preference_s_job_set_is_linked_to_the_job_that_moved_on_from_it():
    from dataclasses import replace

    base = replace(job_row(details(annotations=CONNECTOR_TRAIN["annotations"])), job_set="flyte-r1-prefer-0123abcd")
    for state in ("REJECTED", "FAILED"):
        ended = replace(base, job_id="01a", state=state, submitted_at=T0)
        rows = {r.job_id: r for r in link_spills([ended, replace(base, job_id="01c", submitted_at=T0 + 2)])}
        assert rows["01a"].spilled_to == "01c"
        assert (rows["01c"].spilled_from, rows["01c"].moved_how) == ("01a", "moved at once")


def test_a_gang_member_cancelled_for_its_gang_s_move_is_linked_to_the_job_that_moved_on_from_it():
    from dataclasses import replace

    from armada_flyte.connector.poll.moves import GANG_MOVE_REASON

    base = replace(job_row(details(annotations=CONNECTOR_TRAIN["annotations"])), job_set="flyte-r1-prefer-gang-r1")
    cancelled = replace(base, job_id="01a", state="CANCELLED", cancel_reason=GANG_MOVE_REASON, submitted_at=T0)
    rows = {r.job_id: r for r in link_spills([cancelled, replace(base, job_id="01c", submitted_at=T0 + 2)])}
    assert rows["01a"].spilled_to == "01c"
    assert (rows["01c"].spilled_from, rows["01c"].moved_how) == ("01a", "moved at once")


def test_a_queued_job_moved_on_from_for_having_no_node_left_is_linked_to_the_job_that_took_its_place():
    """The next job is submitted before the queued one is cancelled: it still follows it in the job set."""
    from dataclasses import replace

    from armada_flyte.connector.poll.moves import QUEUED_MOVE_REASON

    base = replace(job_row(details(annotations=CONNECTOR_TRAIN["annotations"])), job_set="flyte-r1-prefer-0a1b")
    cancelled = replace(base, job_id="01a", state="CANCELLED", cancel_reason=QUEUED_MOVE_REASON, submitted_at=T0)
    rows = {r.job_id: r for r in link_spills([cancelled, replace(base, job_id="01c", submitted_at=T0 + 2)])}
    assert rows["01a"].spilled_to == "01c" and not rows["01a"].spilled
    assert (rows["01c"].spilled_from, rows["01c"].moved_how) == ("01a", "moved at once")


def test_a_failed_job_outside_a_preference_s_job_set_is_not_linked():
    from dataclasses import replace

    base = replace(job_row(details(annotations=CONNECTOR_TRAIN["annotations"])), job_set="flyte-r1")
    failed = replace(base, job_id="01a", state="FAILED", submitted_at=T0)
    assert [r.spilled_to for r in link_spills([failed, replace(base, job_id="01c", submitted_at=T0 + 2)])] == ["", ""]
