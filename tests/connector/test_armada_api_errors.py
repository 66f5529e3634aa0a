"""Transient-error retries and error translation, against a real gRPC server on 127.0.0.1 that
fails on purpose (the embedded server never fails these ways)."""

from __future__ import annotations

import asyncio
from concurrent import futures

import grpc
import pytest
from armada_client.armada import job_pb2, job_pb2_grpc, submit_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte  # noqa: F401
from armada_flyte.connector.armada.api import ArmadaApi, ArmadaAuthError, ArmadaUnavailable
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.poll.phases import PHASE_OF_STATE, phase_of
from armada_flyte.errors import SubmissionRefused


class FailingJobs(job_pb2_grpc.JobsServicer):
    """Answers GetJobStatus with `code` for the first `failures` calls, then normally."""

    def __init__(self):
        self.calls = 0
        self.failures = 0
        self.code = grpc.StatusCode.UNAVAILABLE
        self.details = "try later"

    def GetJobStatus(self, request, context):
        self.calls += 1
        if self.calls <= self.failures:
            context.abort(self.code, self.details)
        return job_pb2.JobStatusResponse(job_states={i: submit_pb2.RUNNING for i in request.job_ids})


@pytest.fixture
def jobs():
    servicer = FailingJobs()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    job_pb2_grpc.add_JobsServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    servicer.url = f"127.0.0.1:{port}"
    yield servicer
    server.stop(None)


def status(url: str, **settings):
    return asyncio.run(ArmadaApi(resolve_settings(armada_url=url, **settings)).status(["j1"]))


def test_transient_errors_are_retried_within_the_bound(jobs):
    jobs.failures = 2
    assert status(jobs.url, grpc_retries=3) == {"j1": submit_pb2.RUNNING}
    assert jobs.calls == 3


def test_retries_give_up_after_the_bound(jobs):
    jobs.failures = 10
    with pytest.raises(ArmadaUnavailable, match="ARMADA_URL"):
        status(jobs.url, grpc_retries=1)
    assert jobs.calls == 2


@pytest.mark.parametrize(
    "code, details, error, text",
    [
        (grpc.StatusCode.UNAUTHENTICATED, "bad token", ArmadaAuthError, "ARMADA_FLYTE_AUTH_TOKEN"),
        (grpc.StatusCode.PERMISSION_DENIED, "user x lacks watch", ArmadaAuthError, "permission"),
        (grpc.StatusCode.PERMISSION_DENIED, 'could not find queue "q"', SubmissionRefused, "armadactl create queue"),
        (grpc.StatusCode.INVALID_ARGUMENT, "memory below 1Mi", SubmissionRefused, "memory below 1Mi"),
    ],
)
def test_refusals_are_not_retried_and_say_what_to_do(jobs, code, details, error, text):
    jobs.failures, jobs.code, jobs.details = 10, code, details
    with pytest.raises(error, match=text):
        status(jobs.url, grpc_retries=3)
    assert jobs.calls == 1


@pytest.mark.pure
@pytest.mark.parametrize(
    "state, phase",
    [
        (submit_pb2.QUEUED, TaskExecution.QUEUED),
        (submit_pb2.SUBMITTED, TaskExecution.QUEUED),
        (submit_pb2.LEASED, TaskExecution.QUEUED),
        (submit_pb2.PENDING, TaskExecution.INITIALIZING),
        (submit_pb2.RUNNING, TaskExecution.RUNNING),
        (submit_pb2.UNKNOWN, TaskExecution.QUEUED),
        (submit_pb2.SUCCEEDED, TaskExecution.SUCCEEDED),
        (submit_pb2.FAILED, TaskExecution.FAILED),
        (submit_pb2.REJECTED, TaskExecution.FAILED),
        (submit_pb2.CANCELLED, TaskExecution.ABORTED),
        (submit_pb2.PREEMPTED, TaskExecution.RETRYABLE_FAILED),
    ],
)
def test_state_table(state, phase):
    assert phase_of(state) == phase


@pytest.mark.pure
def test_every_armada_state_is_mapped_and_a_new_one_keeps_polling():
    assert set(PHASE_OF_STATE) == set(submit_pb2.JobState.values())
    assert phase_of(99) == TaskExecution.RUNNING
