"""Task secrets and blob keys on the real path: a task with `flyte.Secret`s reads their values inside
its a0 pod (env and file forms), through a real `c0` over gRPC and in a local run, with the values
held by the embedded cluster's Kubernetes Secrets; and no job spec Armada received (GetJobDetails
with the spec, and the job set's events, submitted event included) holds a secret value."""

from __future__ import annotations

import asyncio
import pathlib
import sys
import uuid

import pytest
from armada_client.armada import event_pb2, job_pb2
from armada_client.client import ArmadaClient
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.local import journal
from armada_flyte.local.stack import BLOB_CREDENTIALS_SECRET, SECRET_KEY

from support.armada_channels import armada_channel
from support.backend_templates import registered_template
from support.c0_service import poll_until_done
from support.flyte_metadata import execution_metadata

pytestmark = pytest.mark.e2e

PROJECT = pathlib.Path(__file__).parent / "project"


@pytest.fixture
def task_secrets(stack, request: pytest.FixtureRequest) -> dict[str, str]:
    """Fresh values in the cluster's Secret for the task's group (so a stale pod can't pass): put in the
    embedded cluster here, or on real Armada the values its bed's executor was started with."""
    sys.path.insert(0, str(PROJECT))
    import secret_tasks

    if stack.server is None:
        values = request.getfixturevalue("bed_secrets")[secret_tasks.GROUP]
    else:
        values = {"api_key": f"api-{uuid.uuid4().hex}", "token": f"tok-{uuid.uuid4().hex}"}
        stack.server.add_secret(secret_tasks.GROUP, values)
    yield values
    sys.path.remove(str(PROJECT))


def received_specs(armada_url: str, job_ids: list[str]) -> list[bytes]:
    """Every job spec Armada holds for `job_ids`, and every event of their job sets, as bytes."""
    channel = armada_channel(armada_url)
    try:
        client = ArmadaClient(channel)
        request = job_pb2.JobDetailsRequest(job_ids=job_ids, expand_job_spec=True)
        details = client.job_stub.GetJobDetails(request).job_details
        assert set(details) == set(job_ids)
        received = [d.job_spec.SerializeToString() for d in details.values()]
        for queue, job_set in {(d.queue, d.jobset) for d in details.values()}:
            events = event_pb2.JobSetRequest(queue=queue, id=job_set, watch=False)
            messages = list(client.event_stub.GetJobSetEvents(events))
            assert any(m.message.WhichOneof("events") == "submitted" for m in messages)
            received += [m.SerializeToString() for m in messages]
        return received
    finally:
        channel.close()


def assert_no_secret_value_in(received: list[bytes], values: list[str]) -> None:
    # The scan reads the real specs: the Secret references are there, the values are not.
    assert any(BLOB_CREDENTIALS_SECRET.encode() in blob for blob in received)
    for value in values:
        assert not any(value.encode() in blob for blob in received), f"a job spec holds the secret value {value[:4]}..."


def test_a_local_run_task_reads_its_secrets_and_no_job_spec_holds_a_secret(flyte_run, stack, task_secrets):
    import secret_tasks

    run = flyte_run(secret_tasks.read_secrets)
    outputs = run.outputs()
    result = outputs[0] if isinstance(outputs, tuple) else outputs
    assert list(result) == [task_secrets["api_key"], task_secrets["api_key"], task_secrets["token"]]
    job_ids = [job.job_id for job in journal.jobs()]
    assert len(job_ids) == 1
    assert_no_secret_value_in(received_specs(stack.armada_url, job_ids), [SECRET_KEY, *task_secrets.values()])


def test_a_backend_task_reads_its_secrets_through_c0_and_no_job_spec_holds_a_secret(stack, c0, task_secrets):
    import secret_tasks
    from flyte._internal.runtime import convert, io

    stack.init_flyte(PROJECT)
    prefix = f"s3://{stack.bucket}/backend/secrets-{uuid.uuid4().hex[:8]}/a1/0"

    async def prepare():
        template = await registered_template(PROJECT, secret_tasks.read_secrets, prefix)
        inputs = await convert.convert_from_native_to_inputs(secret_tasks.read_secrets.native_interface)
        await io.upload_inputs(inputs, io.inputs_path(prefix))
        return template

    template = asyncio.run(prepare())
    assert len(template.security_context.secrets) == 2  # what the SDK sends, ENV_VAR and FILE
    request = connector_pb2.CreateTaskRequest(
        template=template, output_prefix=prefix, task_execution_metadata=execution_metadata("rs", "a1", task="secrets")
    )
    meta = c0.CreateTask(request, timeout=60).resource_meta
    resource = poll_until_done(c0, meta, (TaskExecution.SUCCEEDED, TaskExecution.FAILED), 120)
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message

    async def result():
        outputs = await io.load_outputs(io.outputs_path(prefix))
        return await convert.convert_outputs_to_native(secret_tasks.read_secrets.interface, outputs)

    assert list(asyncio.run(result())) == [task_secrets["api_key"], task_secrets["api_key"], task_secrets["token"]]
    job_id = ArmadaJobMetadata.decode(meta).job_id
    assert_no_secret_value_in(received_specs(stack.armada_url, [job_id]), [SECRET_KEY, *task_secrets.values()])


@pytest.mark.embedded_only
def test_a_task_whose_secret_the_cluster_lacks_fails_with_kubernetes_reason(flyte_run, stack, task_secrets):
    import secret_tasks

    stack.server.add_secret(secret_tasks.GROUP, {"api_key": "only-one-key"})
    with pytest.raises(Exception, match=rf"couldn't find key token in Secret default/{secret_tasks.GROUP}"):
        flyte_run(secret_tasks.read_secrets)
