"""Task timeouts (the pod's activeDeadlineSeconds, and the connector failing an attempt over its
limit, queued or running), incomplete gangs, metadata from other connector versions, and the
external job URI: each through a real `c0` over gRPC, as a Flyte backend drives it."""

from __future__ import annotations

import json

import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte import ArmadaConfig
from armada_flyte.connector.model.metadata import ArmadaJobMetadata

from support.armada_channels import armada_channel
from support.armada_templates import execution_metadata, python_template
from support.c0_service import ARMADA_TASKS, poll_until_done
from support.waiting import stored_job, wait_until

SLEEPER = "import time; time.sleep(600)"


@pytest.fixture
def client(armada):
    channel = armada_channel(armada.url)
    yield ArmadaClient(channel)
    channel.close()


def _create(c0, template, run: str, action: str = "a1", attempt: int = 0) -> bytes:
    request = connector_pb2.CreateTaskRequest(
        template=template,
        output_prefix=f"s3://flyte/raw/{run}/{action}/{attempt}",
        task_execution_metadata=execution_metadata(run=run, action=action, attempt=attempt),
    )
    return c0.CreateTask(request, timeout=30).resource_meta


def _get(c0, meta: bytes):
    return c0.GetTask(connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS), timeout=30).resource


def _seen(c0, meta: bytes):
    """GetTask once Armada shows the job: real Armada's query side has it a moment after the submit."""

    def shown():
        resource = _get(c0, meta)
        return resource if resource.custom_info["armada_state"] != "UNKNOWN" else None

    return wait_until(shown, 30, f"Armada to show job {json.loads(meta)['job_id']}")


def _state(client, job_id: str) -> int:
    return client.get_job_status([job_id]).job_states[job_id]


def test_the_task_timeout_is_the_pods_deadline_and_ends_the_attempt_when_its_run_exceeds_it(c0, client):
    template = python_template(SLEEPER)
    # Long enough for the pod to start first (it is the queued timeout too): real Armada leases and
    # starts a pod in a few seconds on a busy machine.
    template.metadata.timeout.seconds = 8
    meta = _create(c0, template, "timeout")
    job_id = json.loads(meta)["job_id"]
    assert _job_spec(client, job_id).pod_spec.activeDeadlineSeconds == 8  # the pod spec Armada received

    resource = poll_until_done(c0, meta, timeout=60)
    assert resource.phase == TaskExecution.RETRYABLE_FAILED, resource.message
    assert "TaskTimeout" in resource.message and "timeout of 8s running" in resource.message
    assert resource.custom_info["error"]["code"] == "TaskTimeout"
    # Whichever comes first ends it: the connector's cancel, or the kubelet at the pod's deadline.
    wait_until(lambda: _state(client, job_id) in (submit_pb2.CANCELLED, submit_pb2.FAILED), timeout=30)


def test_an_incomplete_gang_says_so_while_queued_and_fails_at_its_timeout(c0, client):
    config = ArmadaConfig(gang_id="trio", gang_cardinality=3)
    metas = []
    for action in ("m0", "m1"):  # only 2 of the 3 members are ever submitted
        template = python_template(SLEEPER, config)
        template.metadata.timeout.seconds = 3
        metas.append(_create(c0, template, "lonely", action))
    waiting = _seen(c0, metas[0])
    assert waiting.phase == TaskExecution.QUEUED, waiting.message
    assert "gang trio" in waiting.message and "none of its 3 members" in waiting.message
    assert "timeout of 3s" in waiting.message

    for meta in metas:
        resource = poll_until_done(c0, meta, timeout=60)
        assert resource.phase == TaskExecution.RETRYABLE_FAILED, resource.message
        assert "timeout of 3s waiting to start" in resource.message and "(it was QUEUED)" in resource.message
        job_id = json.loads(meta)["job_id"]
        wait_until(lambda job_id=job_id: _state(client, job_id) == submit_pb2.CANCELLED, timeout=30)


def test_a_queued_gang_member_without_a_timeout_says_how_to_bound_the_wait(c0, client):
    meta = _create(c0, python_template(SLEEPER, ArmadaConfig(gang_id="pair", gang_cardinality=2)), "unbounded")
    waiting = _seen(c0, meta)
    assert "set timeout= on the task" in waiting.message
    c0.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS), timeout=30)


def _job_spec(client, job_id: str):
    """The job as Armada stored it (GetJobDetails with the job spec expanded), once its query side has it."""
    return stored_job(client, job_id).job_spec


# ---- metadata written by other connector versions ----

# Exactly the fields the connector before this change wrote.
OLDER_FIELDS = (
    "job_id job_set_id queue namespace outputs_path architecture architecture_source node_group submitted_at task"
).split()


@pytest.mark.pure
def test_metadata_decodes_leniently_unknown_keys_ignored_missing_ones_defaulted():
    newer = ArmadaJobMetadata.decode(
        json.dumps({"job_id": "j1", "queue": "flyte", "job_set_id": "s", "from_the_future": {"x": 1}}).encode()
    )
    assert (newer.job_id, newer.queue, newer.timeout_seconds, newer.gang_id) == ("j1", "flyte", 0.0, "")
    retyped = ArmadaJobMetadata.decode(
        json.dumps({"job_id": "j2", "submitted_at": "12.5", "timeout_seconds": [1]}).encode()
    )
    assert (retyped.submitted_at, retyped.timeout_seconds) == (12.5, 0.0)


@pytest.mark.pure
def test_metadata_is_written_as_the_sdk_writes_it():
    from dataclasses import asdict

    meta = ArmadaJobMetadata(
        job_id="j1", queue="flyte", submitted_at=12.5, gang_cardinality=3, task="t\u00e9", refusal='say "no"'
    )
    assert meta.encode() == json.dumps(asdict(meta)).encode("utf-8")  # flyte.connectors ResourceMeta.encode
    assert ArmadaJobMetadata.decode(meta.encode()) == meta


def test_c0_serves_get_and_delete_with_metadata_of_an_older_and_a_newer_connector(c0, client):
    meta = json.loads(_create(c0, python_template(SLEEPER), "versions"))
    older = json.dumps({k: meta[k] for k in OLDER_FIELDS}).encode()
    newer = json.dumps({**meta, "retry_budget": 3, "placement": {"zone": "b"}}).encode()
    del meta["node_group"], meta["namespace"]
    sparse = json.dumps(meta).encode()
    for written in (older, newer, sparse):
        resource = _get(c0, written)
        assert resource.phase in (TaskExecution.QUEUED, TaskExecution.INITIALIZING, TaskExecution.RUNNING)
    c0.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=newer, task_category=ARMADA_TASKS), timeout=30)
    wait_until(lambda: _state(client, meta["job_id"]) == submit_pb2.CANCELLED, timeout=30)
    c0.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=older, task_category=ARMADA_TASKS), timeout=30)


def test_the_job_carries_flytes_identity_as_its_external_job_uri(c0, client):
    meta = json.loads(_create(c0, python_template("pass"), "r9", action="a3", attempt=1))
    uri = "flyte://default/proj/dev/r9/a3/1"  # no org in the metadata: a0's stand-in org
    # Armada's own lookup by external URI (Jobs.GetJobStatusUsingExternalJobUri) finds the job.
    # Real Armada's query side has the job a moment after the submit.
    found = wait_until(
        lambda: client.get_job_status_by_external_job_uri(meta["queue"], meta["job_set_id"], uri).job_states,
        30,
        f"Armada to find job {meta['job_id']} by its external job URI",
    )
    assert dict(found).keys() == {meta["job_id"]}
    # Also set as Armada's (legacy) annotation, as Armada's Airflow operator does.
    assert _job_spec(client, meta["job_id"]).annotations["armadaproject.io/externalJobUri"] == uri
