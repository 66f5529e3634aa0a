"""How a task's failure reaches a Flyte backend through `c0`: recoverable errors become
RETRYABLE_FAILED (so `retries=` fires), the user's error code and kind travel in custom_info,
and a preemption is a SYSTEM retryable failure."""

from __future__ import annotations

import json

from armada_client.client import ArmadaClient
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from support.armada_channels import armada_channel
from support.armada_templates import execution_metadata, python_template
from support.c0_service import poll_until_done
from support.error_pb_pods import ERROR_PB_WRITER
from support.flyte_backend import phases, run_with_retries

# What a0 does when the user's function raises: write error.pb beside the outputs, exit 0. This
# container fails on attempts before SUCCEED_ON (it reads FLYTE_ATTEMPT_NUMBER, as Flyte's
# pod plugin sets it) with the error kind given, then succeeds.
FLAKY = (
    ERROR_PB_WRITER
    + """
attempt, succeed_on, recoverable = int(os.environ["FLYTE_ATTEMPT_NUMBER"]), {succeed_on}, {recoverable}
if attempt < succeed_on:
    write_error_pb(execution_pb2.ContainerError(code="ConnectionError", message=f"flaky on attempt {{attempt}}",
        origin=execution_pb2.ExecutionError.USER,
        kind=execution_pb2.ContainerError.RECOVERABLE if recoverable else execution_pb2.ContainerError.NON_RECOVERABLE))
"""
)


def _attempt_request(code: str, run: str):
    def make(attempt: int):
        prefix = f"s3://flyte/raw/{run}/a1/{attempt}"
        template = python_template(code)
        template.container.args.extend(["--outputs-path", prefix])
        return connector_pb2.CreateTaskRequest(
            template=template,
            output_prefix=prefix,
            task_execution_metadata=execution_metadata(run=run, action="a1", attempt=attempt),
        )

    return make


def test_recoverable_failures_are_retried_by_the_backends_rules_until_the_task_succeeds(c0):
    attempts = run_with_retries(c0, _attempt_request(FLAKY.format(succeed_on=2, recoverable=True), "flaky"), 3)
    assert phases(attempts) == ["RETRYABLE_FAILED", "RETRYABLE_FAILED", "SUCCEEDED"]
    first = attempts[0].resource
    assert first.custom_info["error"]["code"] == "ConnectionError"
    assert first.custom_info["error"]["kind"] == "USER"
    assert "ConnectionError: flaky on attempt 0" in first.message and "USER error" in first.message


def test_a_recoverable_failure_on_the_last_attempt_ends_the_retries(c0):
    attempts = run_with_retries(c0, _attempt_request(FLAKY.format(succeed_on=5, recoverable=True), "spent"), 2)
    # The backend turns the last RETRYABLE_FAILED into a permanent failure (attempts used up).
    assert phases(attempts) == ["RETRYABLE_FAILED", "RETRYABLE_FAILED"]


def test_a_non_recoverable_error_fails_for_good_on_the_first_attempt(c0):
    attempts = run_with_retries(c0, _attempt_request(FLAKY.format(succeed_on=5, recoverable=False), "hopeless"), 3)
    assert phases(attempts) == ["FAILED"]
    assert attempts[0].resource.custom_info["error"]["recoverable"] is False


def test_a_preempted_job_is_a_system_retryable_failure(c0, armada):
    # An interruptible task runs in the preemptible priority class: only those are preempted (Armada's scheduler.go).
    metadata = execution_metadata(run="preempt", action="a1")
    metadata.interruptible = True
    request = connector_pb2.CreateTaskRequest(
        template=python_template("import time; time.sleep(600)"),
        output_prefix="s3://flyte/raw/preempt/a1/0",
        task_execution_metadata=metadata,
    )
    meta = c0.CreateTask(request, timeout=30).resource_meta
    job = json.loads(meta)
    running = poll_to_end_or_running(c0, meta)
    assert running.phase == TaskExecution.RUNNING, running.message
    channel = armada_channel(armada.url)
    try:
        ArmadaClient(channel).preempt_jobs(job["queue"], job["job_set_id"], job["job_id"])
    finally:
        channel.close()
    resource = poll_until_done(c0, meta)
    assert resource.phase == TaskExecution.RETRYABLE_FAILED, resource.message
    assert resource.custom_info["error"]["kind"] == "SYSTEM"
    assert resource.custom_info["error"]["code"] == "Preempted"
    assert "was preempted" in resource.message


def poll_to_end_or_running(c0, meta: bytes):
    class Running(Exception):
        pass

    def stop_when_running(resource):
        if resource.custom_info["armada_state"] == "RUNNING":  # Armada's state: the phase never goes back once RUNNING
            raise Running(resource)

    try:
        return poll_until_done(c0, meta, on_poll=stop_when_running)
    except Running as running:
        return running.args[0]
