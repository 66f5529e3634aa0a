"""The run table: what the executor owes the scheduler about each run it holds, and when it lets go."""

from __future__ import annotations

import pytest

from support.executor_parts import require_executor_stubs

require_executor_stubs()

pytestmark = pytest.mark.pure

from armada_client.armada import submit_pb2  # noqa: E402

from armada_flyte.cluster.error_categories import ErrorCategories  # noqa: E402
from armada_flyte.executor.held_runs import HeldRuns  # noqa: E402
from armada_flyte.executor.leases import LeasedRun, LeaseRefused, Refusal  # noqa: E402
from armada_flyte.pod_runner import ContainerEnd, PodLog  # noqa: E402

RUN = LeasedRun("r-1", "01job", "q", "set", "local", "default", "armada-01job-0", "default", node="amd64-0")


def held(news: list[str] | None = None) -> HeldRuns:
    runs = HeldRuns(ErrorCategories(), on_news=lambda: news.append("news") if news is not None else None)
    runs.hold(RUN, PodLog(), 30.0)
    return runs


def kinds(runs: HeldRuns) -> list[str]:
    return [event.WhichOneof("event") for o in runs.take_outbox(100) for event in o.sequence.events]


def test_the_pods_progress_goes_out_in_order():
    news: list[str] = []
    runs = held(news)
    assert runs.pending("r-1") and runs.running("r-1")
    runs.finished("r-1", 0, "")
    assert kinds(runs) == ["jobRunAssigned", "jobRunRunning", "jobRunSucceeded"]
    assert len(news) == 3


def test_a_run_is_reported_on_its_node_until_its_end_is_delivered():
    runs = held()
    runs.running("r-1")
    assert runs.runs_by_node() == {"amd64-0": {"r-1": submit_pb2.RUNNING}}
    runs.finished("r-1", 2, "", (ContainerEnd("main", 2, "Error", "no"),))
    assert runs.runs_by_node() == {"amd64-0": {"r-1": submit_pb2.FAILED}}
    runs.delivered(runs.take_outbox(100))
    assert runs.runs_by_node() == {}


def test_an_ended_run_is_reported_until_the_scheduler_shows_it_recorded_the_end():
    """Else the scheduler, whose database learns of the end a moment later, would lease the run again."""
    runs = held()
    runs.finished("r-1", 0, "")
    runs.delivered(runs.take_outbox(100))
    assert runs.ended_run_ids() == ["r-1"]
    assert "r-1" in runs
    assert runs.cancel("r-1") is None  # the scheduler's answer for a run it knows ended
    assert runs.ended_run_ids() == []
    assert "r-1" not in runs


def test_an_ended_run_the_scheduler_never_asks_about_is_forgotten_in_time():
    now = [100.0]
    runs = HeldRuns(ErrorCategories(), clock=lambda: now[0])
    runs.hold(RUN, PodLog(), 30.0)
    runs.finished("r-1", 0, "")
    runs.delivered(runs.take_outbox(100))
    runs.forget_ended(before=100.0)
    assert runs.ended_run_ids() == ["r-1"]
    runs.forget_ended(before=100.5)
    assert runs.ended_run_ids() == []


def test_events_the_scheduler_did_not_take_go_out_again_first():
    runs = held()
    runs.pending("r-1")
    batch = runs.take_outbox(100)
    runs.running("r-1")
    runs.undelivered(batch)
    assert kinds(runs) == ["jobRunAssigned", "jobRunRunning"]


def test_a_cancelled_run_is_killed_once_and_reports_nothing_more():
    runs = held()
    runs.running("r-1")
    runs.delivered(runs.take_outbox(100))
    assert runs.cancel("r-1") == 30.0
    assert runs.cancel("r-1") is None
    assert not runs.running("r-1")
    runs.finished("r-1", 143, "killed")
    assert kinds(runs) == []
    assert runs.runs_by_node() == {}


def test_a_run_cancelled_before_its_pod_starts_never_starts():
    runs = held()
    runs.cancel("r-1")
    assert not runs.pending("r-1")


def test_a_preempted_run_reports_its_preemption_and_then_nothing():
    runs = held()
    runs.running("r-1")
    runs.take_outbox(100)
    assert runs.preempt("r-1") == 30.0
    assert runs.runs_by_node() == {"amd64-0": {"r-1": submit_pb2.FAILED}}
    runs.finished("r-1", 143, "killed")
    assert kinds(runs) == ["jobRunPreempted", "jobRunErrors"]


def test_asks_about_runs_it_does_not_hold_are_ignored():
    runs = held()
    assert runs.cancel("other") is None and runs.preempt("other") is None
    runs.finished("other", 0, "")
    assert not runs.pending("other")
    assert kinds(runs) == []


def test_a_refused_lease_is_given_back_and_then_only_reported_as_ended():
    runs = HeldRuns(ErrorCategories())
    runs.refuse(LeaseRefused(RUN, "no node", Refusal.RETURNED))
    [outgoing] = runs.take_outbox(100)
    assert outgoing.sequence.events[0].jobRunErrors.errors[0].podLeaseReturned.message == "no node"
    runs.delivered([outgoing])
    assert runs.ended_run_ids() == ["r-1"]


def test_a_pod_the_runner_could_not_launch_is_given_back():
    runs = held()
    runs.launch_failed("r-1", "no docker")
    [outgoing] = runs.take_outbox(100)
    returned = outgoing.sequence.events[0].jobRunErrors.errors[0].podLeaseReturned
    assert (returned.message, returned.run_attempted) == ("no docker", False)
    assert runs.live_run_ids() == []


def test_stopping_gives_running_runs_back_as_attempted():
    runs = held()
    runs.running("r-1")
    runs.take_outbox(100)
    assert runs.give_back_all("stopped") == ["r-1"]
    runs.finished("r-1", 143, "killed")
    [outgoing] = runs.take_outbox(100)
    assert outgoing.sequence.events[0].jobRunErrors.errors[0].podLeaseReturned.run_attempted
