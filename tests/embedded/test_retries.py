"""Runs that end for a system reason: returned leases are retried up to Armada's limit, lost running
pods fail the job, and a job's runs are listed newest first. These drive the executor side
(what an executor restart reports), so they run against the embedded server only."""

from __future__ import annotations

import pytest
from armada_client.armada import job_pb2, submit_pb2

from armada_flyte.embedded.rules.retries import MAX_ATTEMPTED_RUNS, POD_MISSING

from support.job_events import event_kinds, job_set_events, kind
from support.pods import item, sleeper, submit_one
from support.waiting import job_error, wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only


def latest_run(client, job_id: str) -> str:
    request = job_pb2.JobDetailsRequest(job_ids=[job_id])
    return client.job_stub.GetJobDetails(request).job_details[job_id].latest_run_id


def test_returned_leases_are_retried_until_armadas_attempt_limit(own_armada) -> None:
    armada, client = own_armada(paused=True)
    job_id = submit_one(client, "conformance", "js", item(sleeper(cpu="100m")))
    runs = []
    for _ in range(MAX_ATTEMPTED_RUNS):
        wait_for_state(client, job_id, submit_pb2.LEASED)
        run_id = wait_until(lambda: (r := latest_run(client, job_id)) not in runs and r, what="a new run")
        runs.append(run_id)
        armada.plane.runs.return_lease(run_id, "node went away", run_attempted=True)
    wait_for_state(client, job_id, submit_pb2.FAILED)
    # scheduler.go: requeued while attempts < maxRetries + 1 (4 with config/scheduler/config.yaml)
    assert event_kinds(client, "conformance", "js", job_id).count("lease_returned") == MAX_ATTEMPTED_RUNS
    error = job_error(client, job_id)
    assert error.startswith(f"Maximum number of attempts ({MAX_ATTEMPTED_RUNS}) reached")
    assert error.endswith("Final run error:\nnode went away")
    request = job_pb2.JobDetailsRequest(job_ids=[job_id], expand_job_run=True)
    details = client.job_stub.GetJobDetails(request).job_details[job_id]
    assert [r.run_id for r in details.job_runs] == runs[::-1]  # query.sql orders runs by leased desc
    assert {r.state for r in details.job_runs} == {job_pb2.RUNS_STATE_LEASE_RETURNED}


def test_a_lease_returned_before_the_pod_ran_does_not_count(own_armada) -> None:
    armada, client = own_armada(paused=True)
    job_id = submit_one(client, "conformance", "js", item(sleeper(cpu="100m")))
    seen = []
    for _ in range(MAX_ATTEMPTED_RUNS + 1):
        wait_for_state(client, job_id, submit_pb2.LEASED)
        run_id = wait_until(lambda: (r := latest_run(client, job_id)) not in seen and r, what="a new run")
        seen.append(run_id)
        armada.lose_pods()  # a leased pod not started: its lease is returned, not attempted
    wait_for_state(client, job_id, submit_pb2.LEASED)
    returned = [
        m.message.lease_returned for m in job_set_events(client, "conformance", "js") if kind(m) == "lease_returned"
    ]
    assert len(returned) == MAX_ATTEMPTED_RUNS + 1
    assert not any(event.run_attempted for event in returned)
    assert returned[0].reason == POD_MISSING


def test_an_executor_losing_a_running_pod_fails_its_job(own_armada) -> None:
    armada, client = own_armada()
    job_id = submit_one(client, "conformance", "js", item(sleeper(cpu="100m")))
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    armada.lose_pods()
    wait_for_state(client, job_id, submit_pb2.FAILED)  # pod_issue_handler.go: a missing active pod is not retried
    assert job_error(client, job_id) == POD_MISSING
    assert event_kinds(client, "conformance", "js", job_id)[-1] == "failed"
