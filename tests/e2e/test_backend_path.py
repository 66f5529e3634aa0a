"""The backend path: a registered task's template, rendered as a Flyte backend renders it, driven
through the `c0` connector service over gRPC into the embedded Armada server, with a real a0 pod
reading its inputs from and writing its outputs to the S3 blob store."""

from __future__ import annotations

import asyncio
import pathlib
import sys

import pytest
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from support.backend_templates import registered_template
from support.c0_service import ARMADA_TASKS, poll_until_done
from support.flyte_backend import phases, run_with_retries
from support.flyte_metadata import execution_metadata

pytestmark = pytest.mark.e2e

PROJECT = pathlib.Path(__file__).parent / "project"
ARMADA = ARMADA_TASKS


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
        resource = poll_until_done(c0, meta, (TaskExecution.SUCCEEDED, TaskExecution.FAILED), 120)
        assert resource.phase == TaskExecution.SUCCEEDED, resource.message
        assert resource.custom_info["node_group"] == "amd64"

        async def result():
            outputs = await io.load_outputs(io.outputs_path(prefix))
            return await convert.convert_outputs_to_native(workflows.square.interface, outputs)

        assert asyncio.run(result()) == 144
    finally:
        sys.path.remove(str(PROJECT))


def test_a_task_with_retries_that_fails_recoverably_twice_is_retried_by_the_backends_rules(stack, c0):
    """Real a0 pods: the user's ConnectionError is recoverable, so each failed attempt comes back
    RETRYABLE_FAILED with the user's code, and the third attempt (FLYTE_ATTEMPT_NUMBER=2) succeeds."""
    sys.path.insert(0, str(PROJECT))
    try:
        import workflows
        from flyte._internal.runtime import convert, io

        stack.init_flyte(PROJECT)

        def attempt_request(attempt: int):
            prefix = f"s3://{stack.bucket}/backend/rflaky/a1/{attempt}"

            async def prepare():
                template = await registered_template(PROJECT, workflows.flaky, prefix)
                inputs = await convert.convert_from_native_to_inputs(workflows.flaky.native_interface, succeed_on=2)
                await io.upload_inputs(inputs, io.inputs_path(prefix))
                return template

            template = asyncio.run(prepare())
            meta = execution_metadata("rflaky", "a1", attempt=attempt, task="flaky")
            meta.max_attempts = template.metadata.retries.retries + 1
            return connector_pb2.CreateTaskRequest(
                template=template, output_prefix=prefix, task_execution_metadata=meta
            )

        first = attempt_request(0)
        attempts = run_with_retries(
            c0, lambda n: first if n == 0 else attempt_request(n), first.task_execution_metadata.max_attempts
        )
        assert phases(attempts) == ["RETRYABLE_FAILED", "RETRYABLE_FAILED", "SUCCEEDED"], [
            a.resource.message for a in attempts
        ]
        error = attempts[1].resource.custom_info["error"]
        assert (error["code"], error["kind"], error["recoverable"]) == ("ConnectionError", "USER", True)
        assert "flaky on attempt 1" in attempts[1].resource.message

        async def result():
            outputs = await io.load_outputs(io.outputs_path(f"s3://{stack.bucket}/backend/rflaky/a1/2"))
            return await convert.convert_outputs_to_native(workflows.flaky.interface, outputs)

        assert asyncio.run(result()) == 2
    finally:
        sys.path.remove(str(PROJECT))
