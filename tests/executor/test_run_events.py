"""What the executor tells Armada about a run, read against real Armada's executor."""

from __future__ import annotations

import pytest

from support.executor_parts import require_executor_stubs

require_executor_stubs()

pytestmark = pytest.mark.pure

from armada_flyte.cluster.error_categories import ErrorCategories  # noqa: E402
from armada_flyte.executor import run_events  # noqa: E402
from armada_flyte.executor.leases import LeasedRun  # noqa: E402
from armada_flyte.executor.stubs import events_pb2  # noqa: E402
from armada_flyte.pod_runner import ContainerEnd, PodEnd  # noqa: E402

RUN = LeasedRun("r-1", "01job", "q", "set", "local", "default", "armada-01job-0", "default", node="arm64-1")
CATEGORIES = ErrorCategories()


def only_event(sequence: events_pb2.EventSequence) -> events_pb2.EventSequence.Event:
    assert (sequence.queue, sequence.job_set_name) == ("q", "set")
    assert len(sequence.events) == 1
    return sequence.events[0]


def pod_error(sequence: events_pb2.EventSequence) -> tuple[events_pb2.Error, events_pb2.PodError]:
    errors = only_event(sequence).jobRunErrors
    assert (errors.run_id, errors.job_id) == ("r-1", "01job")
    [error] = errors.errors
    assert error.terminal
    return error, error.podError


def test_pending_names_the_pod_but_no_node():
    assigned = only_event(run_events.assigned(RUN)).jobRunAssigned
    assert (assigned.run_id, assigned.job_id, assigned.pool) == ("r-1", "01job", "default")
    [info] = assigned.resourceInfos
    assert (info.objectMeta.name, info.objectMeta.executor_id, info.podInfo.node_name) == (
        "armada-01job-0",
        "local",
        "",
    )


def test_running_and_succeeded_name_the_node():
    [running] = only_event(run_events.running(RUN)).jobRunRunning.resourceInfos
    [succeeded] = only_event(run_events.ended(RUN, PodEnd(0), CATEGORIES)).jobRunSucceeded.resourceInfos
    assert running.podInfo.node_name == succeeded.podInfo.node_name == "arm64-1"


def test_a_failed_container_reads_as_armadas_failure_text_with_its_exit_code():
    end = PodEnd(3, "boom", (ContainerEnd("main", 3, "Error", "boom"), ContainerEnd("side", 0, "Completed")))
    error, pod = pod_error(run_events.ended(RUN, end, CATEGORIES))
    assert pod.message == "Container main failed with exit code 3 because Error: boom\n"
    assert [(c.objectMeta.name, c.exit_code, c.reason) for c in pod.containerErrors] == [
        ("main", 3, "Error"),
        ("side", 0, "Completed"),
    ]
    assert (pod.node_name, pod.kubernetes_reason) == ("arm64-1", events_pb2.AppError)
    assert error.failure_category == "uncategorized"


def test_the_executors_error_categories_apply():
    error, _ = pod_error(
        run_events.ended(RUN, PodEnd(1, "", (ContainerEnd("main", 1, "Error", "bad input"),)), CATEGORIES)
    )
    assert error.failure_category == "user_error"


def test_an_oom_killed_container_is_an_oom():
    end = PodEnd(137, "OOM", (ContainerEnd("main", 137, "OOMKilled", "over its limit"),))
    error, pod = pod_error(run_events.ended(RUN, end, CATEGORIES))
    assert pod.kubernetes_reason == pod.containerErrors[0].kubernetes_reason == events_pb2.OOM
    assert error.failure_category == "oom"


def test_a_pod_past_its_deadline_carries_the_pods_own_message():
    end = PodEnd(137, "Pod was active on the node longer than the specified deadline", (), "DeadlineExceeded")
    _, pod = pod_error(run_events.ended(RUN, end, CATEGORIES))
    assert pod.message == "Pod was active on the node longer than the specified deadline"
    assert pod.kubernetes_reason == events_pb2.DeadlineExceeded


def test_a_pod_that_never_started_carries_the_runners_error():
    _, pod = pod_error(run_events.ended(RUN, PodEnd(128, "image not found"), CATEGORIES))
    assert pod.message == "image not found"


def test_preemption_is_a_preempted_event_then_the_runs_error():
    preempted, failed = run_events.preempted(RUN).events
    assert (preempted.jobRunPreempted.preempted_run_id, preempted.jobRunPreempted.preempted_job_id) == ("r-1", "01job")
    assert failed.jobRunErrors.errors[0].podError.message == "Run preempted"


def test_a_returned_lease_says_whether_the_pod_ran():
    [error] = only_event(run_events.lease_returned(RUN, "gone", run_attempted=True)).jobRunErrors.errors
    assert error.terminal
    assert (error.podLeaseReturned.message, error.podLeaseReturned.run_attempted) == ("gone", True)


def test_a_lease_the_executor_could_not_read_is_an_internal_failure():
    error, pod = pod_error(run_events.not_created(RUN, "no podspec", unreadable=True))
    assert (error.failure_category, error.failure_subcategory) == ("internal", "job-creation-failed")
    assert (pod.message, pod.objectMeta.name) == ("no podspec", "")


def test_a_pod_kubernetes_refused_is_a_plain_failure():
    error, pod = pod_error(run_events.not_created(RUN, 'namespaces "x" not found', unreadable=False))
    assert not error.failure_category
    assert (pod.message, pod.objectMeta.name, pod.node_name) == ('namespaces "x" not found', "armada-01job-0", "")
