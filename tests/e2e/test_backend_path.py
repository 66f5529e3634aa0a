"""The backend path: a registered task's template, rendered as a Flyte backend renders it, driven
through the `c0` connector service over gRPC into the embedded Armada server, with a real a0 pod
reading its inputs from and writing its outputs to the S3 blob store."""

from __future__ import annotations

import asyncio
import pathlib
import sys
import time

import pytest
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

from support.backend_templates import registered_template
from support.c0_service import ARMADA_TASKS, running_c0
from support.flyte_metadata import execution_metadata

pytestmark = pytest.mark.e2e

PROJECT = pathlib.Path(__file__).parent / "project"
ARMADA = ARMADA_TASKS


@pytest.fixture
def c0(stack, tmp_path):
    env = {
        "ARMADA_URL": stack.armada_url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "FLYTE_BLOB_ENDPOINT": stack.blob_endpoint,
        "FLYTE_BLOB_ACCESS_KEY": ACCESS_KEY,
        "FLYTE_BLOB_SECRET_KEY": SECRET_KEY,
        "ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET": BLOB_CREDENTIALS_SECRET,
    }
    with running_c0(env, tmp_path / "c0.log") as stub:
        yield stub


def test_a_registered_task_runs_through_c0_and_its_typed_output_lands_in_the_blob_store(stack, c0):
    sys.path.insert(0, str(PROJECT))
    try:
        import workflows
        from flyte._internal.runtime import convert, io

        stack.init_flyte(PROJECT)
        prefix = f"s3://{stack.bucket}/backend/r1/a1/0"

        async def prepare():
            template = await registered_template(PROJECT, workflows.square, prefix)
            inputs = await convert.convert_from_native_to_inputs(workflows.square.native_interface, x=12)
            await io.upload_inputs(inputs, io.inputs_path(prefix))
            return template

        template = asyncio.run(prepare())
        assert "{{.runName}}" in template.container.args  # left for the connector, as a backend does
        request = connector_pb2.CreateTaskRequest(
            template=template,
            output_prefix=prefix,
            task_execution_metadata=execution_metadata("r1", "a1", task="square"),
        )
        meta = c0.CreateTask(request, timeout=60).resource_meta
        deadline = time.monotonic() + 120
        while True:
            resource = c0.GetTask(
                connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA), timeout=30
            ).resource
            if resource.phase in (TaskExecution.SUCCEEDED, TaskExecution.FAILED):
                break
            assert time.monotonic() < deadline, resource.message
            time.sleep(0.1)
        assert resource.phase == TaskExecution.SUCCEEDED, resource.message
        assert resource.custom_info["node_group"] == "amd64"

        async def result():
            outputs = await io.load_outputs(io.outputs_path(prefix))
            return await convert.convert_outputs_to_native(workflows.square.interface, outputs)

        assert asyncio.run(result()) == 144
    finally:
        sys.path.remove(str(PROJECT))
