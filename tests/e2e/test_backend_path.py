"""The backend path: a registered task's template, rendered as a Flyte backend renders it, driven
through the `c0` connector service over gRPC into the embedded Armada server, with a real a0 pod
reading its inputs from and writing its outputs to the S3 blob store."""

from __future__ import annotations

import asyncio
import pathlib
import sys
import time
import uuid

import pytest
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution
from google.protobuf import json_format

from support.backend_templates import registered_template
from support.c0_service import ARMADA_TASKS, TERMINAL, poll_until_done
from support.flyte_backend import phases, run_with_retries
from support.flyte_metadata import execution_metadata
from support.waiting import wait_until

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


GANG_WAIT = "Armada starts none of its 4 members until all are submitted"


def test_a_gangs_members_called_by_a_remote_parent_reach_c0_as_one_gang_that_starts_all_at_once(stack, c0):
    """`crew_gang` run as its pod runs it (mode remote, attempt 0): the Gang's four calls, serialised by Flyte
    with their per-call override, reach c0 as four CreateTasks of one gang (id `crew-a0-0-1`, 4 members). With
    three of them created, nothing starts, even after Armada ran a plain job created after them; once the fourth
    is created, all four run, on one architecture, and the parent gets their results."""
    from armada_client.client import ArmadaClient
    from flyte._internal.runtime import convert

    from armada_flyte.connector.model.metadata import ArmadaJobMetadata
    from armada_flyte.spec import SubmissionSpec

    from support.armada_channels import armada_channel
    from support.armada_templates import python_template
    from support.job_events import job_of, job_set_events, kind
    from support.remote_parent import BackendStandIn, run_parent

    sys.path.insert(0, str(PROJECT))
    try:
        import workflows

        from armada_flyte.local.run import upload_code_bundle

        stack.init_flyte(PROJECT)
        run_name = f"rgang{uuid.uuid4().hex[:6]}"
        held: list[str] = []
        first_three = asyncio.Event()

        async def hold_the_fourth(action: str, template) -> None:
            if len(held) < 3:
                held.append(action)
                if len(held) == 3:
                    first_three.set()
                return
            await first_three.wait()
            await asyncio.to_thread(nothing_starts_with_three, standin)

        def answer(meta: bytes):
            request = connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA)
            return c0.GetTask(request, timeout=30).resource

        def nothing_starts_with_three(standin: BackendStandIn) -> None:
            wait_until(lambda: len(standin.created) == 3, 60, "the first three CreateTasks")
            for created in standin.created:
                wait_until(lambda meta=created.resource_meta: GANG_WAIT in answer(meta).message, 60, "the gang wait")
            probe = connector_pb2.CreateTaskRequest(
                template=python_template("print('probe')"),
                output_prefix=f"s3://{stack.bucket}/remote-parent/{run_name}/probe",
                task_execution_metadata=execution_metadata(run_name, "probe", task="probe"),
            )
            probe_meta = c0.CreateTask(probe, timeout=60).resource_meta
            assert poll_until_done(c0, probe_meta, TERMINAL, 120).phase == TaskExecution.SUCCEEDED
            for created in standin.created:  # Armada ran a job created after them, and did not start them
                still = answer(created.resource_meta)
                assert still.custom_info["armada_state"] == "QUEUED" and GANG_WAIT in still.message, still.message

        standin = BackendStandIn(c0, PROJECT, before_create=hold_the_fourth)

        async def scenario():
            bundle = await upload_code_bundle(
                PROJECT, f"s3://{stack.bucket}/remote-parent", f"s3://{stack.bucket}/remote-parent"
            )
            outputs, error = await run_parent(workflows.crew_gang, standin, stack.bucket, run_name, bundle, n=4)
            assert error is None, error
            return await convert.convert_outputs_to_native(workflows.crew_gang.native_interface, outputs)

        assert list(asyncio.run(scenario())) == [0, 1, 2, 3]
    finally:
        sys.path.remove(str(PROJECT))

    assert len(standin.created) == 4 and len({c.action for c in standin.created}) == 4
    specs = [SubmissionSpec.from_custom(json_format.MessageToDict(c.template.custom)) for c in standin.created]
    assert {(s.gang_id, s.gang_cardinality) for s in specs} == {("crew-a0-0-1", 4)}  # the attempt mark: remote's 0
    answers = [standin.answers[c.action] for c in standin.created]
    assert {a.phase for a in answers} == {TaskExecution.SUCCEEDED}, [a.message for a in answers]
    assert len({a.custom_info["node_group"] for a in answers}) == 1  # members of `any`, placed as one

    metas = [ArmadaJobMetadata.decode(c.resource_meta) for c in standin.created]
    assert len({(m.queue, m.job_set_id) for m in metas}) == 1
    jobs = {m.job_id for m in metas}
    messages = job_set_events(ArmadaClient(armada_channel(stack.armada_url)), metas[0].queue, metas[0].job_set_id)
    ours = [(kind(m), job_of(m)) for m in messages if job_of(m) in jobs]
    submitted = [n for n, (k, _) in enumerate(ours) if k == "submitted"]
    leased = [n for n, (k, _) in enumerate(ours) if k == "leased"]
    assert len(submitted) == 4 and len(leased) == 4 and max(submitted) < min(leased), ours
    gangs = {
        (
            m.message.submitted.job.annotations["armadaproject.io/gangId"],
            m.message.submitted.job.annotations["armadaproject.io/gangCardinality"],
        )
        for m in messages
        if kind(m) == "submitted" and job_of(m) in jobs
    }
    ((gang_id, cardinality),) = gangs
    assert gang_id.startswith("crew-a0-0-1") and cardinality == "4"


def test_a_remote_parents_gang_declaring_five_with_four_members_fails_before_anything_reaches_c0(stack, c0):
    """The same parent with cardinality=5: its pod fails the attempt with GangCardinalityMismatch, both numbers
    named, and no CreateTask is sent, so no member waits in Armada for a fifth."""
    from support.remote_parent import BackendStandIn, run_parent

    sys.path.insert(0, str(PROJECT))
    try:
        import workflows

        stack.init_flyte(PROJECT)
        standin = BackendStandIn(c0, PROJECT)
        started = time.monotonic()
        _, error = asyncio.run(
            run_parent(
                workflows.crew_gang, standin, stack.bucket, f"rgang5{uuid.uuid4().hex[:6]}", None, n=4, declared=5
            )
        )
    finally:
        sys.path.remove(str(PROJECT))
    assert error is not None and error.err.code == "GangCardinalityMismatch", error
    assert "declares 5 members, but 4 were added" in error.err.message
    assert standin.created == [] and time.monotonic() - started < 30
