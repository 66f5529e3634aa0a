"""Armada's Jobs gRPC service: the query side (status, errors, details) over the control plane."""

from __future__ import annotations

from typing import Sequence

import grpc
from armada_client.armada import job_pb2, job_pb2_grpc

from armada_flyte.armada_names import MAX_IDS_PER_CALL
from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.model.refusals import Refusal, as_status
from armada_flyte.embedded.services.messages import job_details, run_details


def _bounded(ids: Sequence[str], what: str = "jobIds") -> list[str]:
    """Armada's query API answers more than 500 ids with a plain error, so UNKNOWN (queryapi/query_api.go)."""
    if len(ids) > MAX_IDS_PER_CALL:
        raise Refusal(f"request contained more than {MAX_IDS_PER_CALL} {what}")
    return list(ids)


class JobsServicer(job_pb2_grpc.JobsServicer):
    def __init__(self, plane: ControlPlane):
        self._plane = plane

    @as_status
    async def GetJobStatus(
        self, request: job_pb2.JobStatusRequest, context: grpc.aio.ServicerContext
    ) -> job_pb2.JobStatusResponse:
        """On the server's event loop, not a worker thread: the states are read without the lock, in well
        under a millisecond, and a hop to a worker and back would wait for the GIL twice."""
        return job_pb2.JobStatusResponse(job_states=self._plane.queries.states(_bounded(request.job_ids)))

    @as_status
    def GetJobStatusUsingExternalJobUri(
        self, request: job_pb2.JobStatusUsingExternalJobUriRequest, context: grpc.ServicerContext
    ) -> job_pb2.JobStatusResponse:
        job = self._plane.queries.job_by_external_uri(request.queue, request.jobset, request.external_job_uri)
        return job_pb2.JobStatusResponse(job_states={job.id: int(job.state)} if job else {})

    @as_status
    def GetJobErrors(
        self, request: job_pb2.JobErrorsRequest, context: grpc.ServicerContext
    ) -> job_pb2.JobErrorsResponse:
        return job_pb2.JobErrorsResponse(job_errors=self._plane.queries.errors(_bounded(request.job_ids, "JobIds")))

    @as_status
    def GetJobDetails(
        self, request: job_pb2.JobDetailsRequest, context: grpc.ServicerContext
    ) -> job_pb2.JobDetailsResponse:
        ids = _bounded(request.job_ids)
        with self._plane.queries.lock():
            details = {
                job.id: job_details(job, request.expand_job_spec, request.expand_job_run)
                for job in self._plane.queries.jobs(ids)
            }
        return job_pb2.JobDetailsResponse(job_details=details)

    @as_status
    def GetJobRunDetails(
        self, request: job_pb2.JobRunDetailsRequest, context: grpc.ServicerContext
    ) -> job_pb2.JobRunDetailsResponse:
        ids = _bounded(request.run_ids, "RunIds")
        with self._plane.queries.lock():
            details = {run.id: run_details(run) for run in self._plane.queries.runs(ids)}
        return job_pb2.JobRunDetailsResponse(job_run_details=details)

    @as_status
    def GetActiveQueues(
        self, request: job_pb2.GetActiveQueuesRequest, context: grpc.ServicerContext
    ) -> job_pb2.GetActiveQueuesResponse:
        active = self._plane.queries.active_queues()
        return job_pb2.GetActiveQueuesResponse(
            active_queues_by_pool={pool: job_pb2.ActiveQueues(queues=queues) for pool, queues in active.items()}
        )
