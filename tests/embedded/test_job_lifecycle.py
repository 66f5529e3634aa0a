"""A job's life through the API: states and their events, status, errors, details and logs."""

from __future__ import annotations

import uuid

import grpc
import pytest
from armada_client.armada import event_pb2, submit_pb2
from armada_client.client import ArmadaClient
from armada_client.log_client import JobLogClient

from support.job_events import event_kinds, job_of, job_set_events, kind
from support.pods import item, pod, python, submit_one
from support.waiting import job_error, wait_for_state, wait_until

SUCCEEDED, FAILED = submit_pb2.SUCCEEDED, submit_pb2.FAILED


def test_a_job_moves_queued_leased_pending_running_succeeded(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(["true"])))
    wait_for_state(client, job_id, SUCCEEDED)
    kinds = wait_until(
        lambda: (k := event_kinds(client, queue, job_set, job_id)) and k[-1] == "succeeded" and k,
        what="the succeeded event",
    )
    assert kinds == ["submitted", "queued", "leased", "pending", "running", "succeeded"]


def test_the_succeeded_event_names_no_node_only_the_running_event_does(
    client: ArmadaClient, queue: str, job_set: str
) -> None:
    """Real Armada's succeeded event comes from its scheduler's JobSucceeded, which carries no pod, node or
    cluster (internal/server/event/conversion/conversions.go): a client learns the node from the running event."""
    job_id = submit_one(client, queue, job_set, item(pod(["true"])))
    wait_for_state(client, job_id, SUCCEEDED)

    def ended() -> dict[str, event_pb2.EventMessage]:
        found = {kind(m): m.message for m in job_set_events(client, queue, job_set) if job_of(m) == job_id}
        return found if "succeeded" in found else {}

    events = wait_until(ended, what="the succeeded event")
    succeeded = events["succeeded"].succeeded
    assert (succeeded.node_name, succeeded.cluster_id, succeeded.pod_name) == ("", "", "")
    assert events["running"].running.node_name


def test_unknown_job_id_reads_unknown(client: ArmadaClient) -> None:
    missing = uuid.uuid4().hex
    assert client.get_job_status([missing]).job_states[missing] == submit_pb2.UNKNOWN


@pytest.mark.parametrize("call", ["get_job_status", "get_job_errors", "get_job_details"])
def test_more_than_500_ids_is_refused(client: ArmadaClient, call: str) -> None:
    ids = [uuid.uuid4().hex for _ in range(501)]
    with pytest.raises(grpc.RpcError) as error:
        getattr(client, call)(ids)
    # internal/server/queryapi/query_api.go answers with a plain error, which gRPC sends as UNKNOWN
    assert error.value.code() == grpc.StatusCode.UNKNOWN
    assert "request contained more than 500" in error.value.details()


def test_500_ids_are_answered(client: ArmadaClient) -> None:
    ids = [uuid.uuid4().hex for _ in range(500)]
    assert len(client.get_job_status(ids).job_states) == 500


def test_a_failing_job_reports_the_tail_of_its_stderr(client: ArmadaClient, queue: str, job_set: str) -> None:
    code = "import sys; print('working'); print('disk full', file=sys.stderr); sys.exit(3)"
    job_id = submit_one(client, queue, job_set, item(pod(python(code))))
    wait_for_state(client, job_id, FAILED)
    assert "disk full" in job_error(client, job_id)


def test_a_failed_event_carries_the_exit_code_in_its_container_status(
    client: ArmadaClient, queue: str, job_set: str
) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(python("raise SystemExit(7)"))))
    wait_for_state(client, job_id, FAILED)
    [failed] = wait_until(
        lambda: [m.message.failed for m in job_set_events(client, queue, job_set) if kind(m) == "failed"],
        what="the failed event",
    )
    # makeJobFailed (internal/server/event/conversion/conversions.go) fills container_statuses, never exit_codes
    assert [(s.name, s.exitCode) for s in failed.container_statuses] == [("main", 7)]
    assert dict(failed.exit_codes) == {}
    # ExtractPodFailedReason (internal/executor/util/pod_status.go)
    assert failed.reason.startswith("Container main failed with exit code 7 because ")
    assert failed.cause == event_pb2.Error


def test_details_name_the_node_the_job_ran_on(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(["true"])))
    wait_for_state(client, job_id, SUCCEEDED)
    details = client.get_job_details([job_id]).job_details[job_id]
    assert details.state == SUCCEEDED and details.queue == queue and details.jobset == job_set
    run = details.job_runs[0]
    assert run.node and run.run_id == details.latest_run_id and run.state == 4  # RUN_STATE_SUCCEEDED


@pytest.mark.embedded_only
def test_node_names_start_with_their_node_group(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(["true"])))
    wait_for_state(client, job_id, SUCCEEDED)
    node = client.get_job_details([job_id]).job_details[job_id].job_runs[0].node
    assert node.startswith("amd64-")


@pytest.mark.embedded_only
def test_logs_come_from_binoculars(client: ArmadaClient, armada_url: str, queue: str, job_set: str) -> None:
    code = "import sys; print('to stdout'); print('to stderr', file=sys.stderr)"
    job_id = submit_one(client, queue, job_set, item(pod(python(code))))
    wait_for_state(client, job_id, SUCCEEDED)
    lines = JobLogClient(armada_url, job_id, disable_ssl=True).logs()
    assert [line.line for line in lines] == ["to stdout", "to stderr"]
    assert all(line.timestamp.endswith("Z") for line in lines)


@pytest.mark.embedded_only
def test_logs_since_a_time_leave_out_earlier_lines(
    client: ArmadaClient, armada_url: str, queue: str, job_set: str
) -> None:
    code = "import time; print('first', flush=True); time.sleep(0.2); print('second')"
    job_id = submit_one(client, queue, job_set, item(pod(python(code))))
    wait_for_state(client, job_id, SUCCEEDED)
    logs = JobLogClient(armada_url, job_id, disable_ssl=True)
    first = logs.logs()[0]
    assert [line.line for line in logs.logs(since_time=first.timestamp)] == ["second"]
