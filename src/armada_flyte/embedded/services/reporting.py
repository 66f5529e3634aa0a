"""Armada's SchedulerReporting gRPC service (served by its API server, internal/server/server.go).

The stubs come from armada_flyte/protos (armada_client does not ship this service).
"""

from __future__ import annotations

import grpc

from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.model.refusals import InvalidArgument, as_status
from armada_flyte.embedded.store.jobs import is_job_id
from armada_flyte.protos import scheduler_reporting_pb2 as reporting_pb2
from armada_flyte.protos import scheduler_reporting_pb2_grpc as reporting_pb2_grpc


class SchedulerReportingServicer(reporting_pb2_grpc.SchedulerReportingServicer):
    def __init__(self, plane: ControlPlane):
        self._plane = plane

    @as_status
    def GetJobReport(
        self, request: reporting_pb2.JobReportRequest, context: grpc.ServicerContext
    ) -> reporting_pb2.JobReport:
        job_id = request.job_id.strip()
        if not is_job_id(job_id):  # Armada parses the id as a ULID first (internal/scheduler/reports/server.go)
            raise InvalidArgument(f"{request.job_id} is not a valid jobId")
        return reporting_pb2.JobReport(report=self._plane.queries.job_report(job_id))

    @as_status
    def GetQueueReport(
        self, request: reporting_pb2.QueueReportRequest, context: grpc.ServicerContext
    ) -> reporting_pb2.QueueReport:
        return reporting_pb2.QueueReport(report=self._plane.queries.queue_report(request.queue_name.strip()))

    @as_status
    def GetSchedulingReport(
        self, request: reporting_pb2.SchedulingReportRequest, context: grpc.ServicerContext
    ) -> reporting_pb2.SchedulingReport:
        which = request.WhichOneof("filter")
        if which == "most_recent_for_job":
            report = self._plane.queries.job_report(request.most_recent_for_job.job_id.strip())
        elif which == "most_recent_for_queue":
            report = self._plane.queries.queue_report(request.most_recent_for_queue.queue_name.strip())
        else:
            report = self._plane.queries.round_report()
        return reporting_pb2.SchedulingReport(report=report)
