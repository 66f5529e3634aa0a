"""Armada's Submit and QueueService gRPC services over the control plane's commands.

Armada serves the queue methods on both services (armada_client calls them on QueueService),
so they live in one mixin both servicers share. Each call passes its requestor down.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

import grpc
from armada_client.armada import health_pb2, submit_pb2, submit_pb2_grpc
from google.protobuf import empty_pb2

from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.model.refusals import Refusal, as_status
from armada_flyte.embedded.services.auth import requestor
from armada_flyte.embedded.store.write_health import FIX
from armada_flyte.health_reasons import as_metadata
from armada_flyte.server_credentials import Credentials


class _QueueMethods:
    _plane: ControlPlane
    _credentials: Optional[Credentials]

    @as_status
    def CreateQueue(self, request: submit_pb2.Queue, context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._plane.queues.create(request, requestor(self._credentials, context))
        return empty_pb2.Empty()

    def CreateQueues(
        self, request: submit_pb2.QueueList, context: grpc.ServicerContext
    ) -> submit_pb2.BatchQueueCreateResponse:
        creator = requestor(self._credentials, context)
        failed = [
            submit_pb2.QueueCreateResponse(queue=q, error=e)
            for q, e in _each(lambda queue: self._plane.queues.create(queue, creator), request.queues)
        ]
        return submit_pb2.BatchQueueCreateResponse(failed_queues=failed)

    @as_status
    def UpdateQueue(self, request: submit_pb2.Queue, context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._plane.queues.update(request)
        return empty_pb2.Empty()

    def UpdateQueues(
        self, request: submit_pb2.QueueList, context: grpc.ServicerContext
    ) -> submit_pb2.BatchQueueUpdateResponse:
        failed = [
            submit_pb2.QueueUpdateResponse(queue=q, error=e)
            for q, e in _each(self._plane.queues.update, request.queues)
        ]
        return submit_pb2.BatchQueueUpdateResponse(failed_queues=failed)

    @as_status
    def DeleteQueue(self, request: submit_pb2.QueueDeleteRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._plane.commands.delete_queue(request.name)
        return empty_pb2.Empty()

    @as_status
    def GetQueue(self, request: submit_pb2.QueueGetRequest, context: grpc.ServicerContext) -> submit_pb2.Queue:
        return self._plane.queues.get(request.name)

    def GetQueues(
        self, request: submit_pb2.StreamingQueueGetRequest, context: grpc.ServicerContext
    ) -> Iterator[submit_pb2.StreamingQueueMessage]:
        queues = self._plane.queues.all()
        for queue in queues[: request.num or len(queues)]:
            yield submit_pb2.StreamingQueueMessage(queue=queue)
        yield submit_pb2.StreamingQueueMessage(end=submit_pb2.EndMarker())


def _each(action: Any, queues: Any) -> Iterator[tuple[submit_pb2.Queue, str]]:
    """Apply `action` to every queue; yield the ones it refused, with the reason."""
    for queue in queues:
        try:
            action(queue)
        except Refusal as refusal:
            yield queue, str(refusal)


class SubmitServicer(_QueueMethods, submit_pb2_grpc.SubmitServicer):
    def __init__(self, plane: ControlPlane, credentials: Optional[Credentials]):
        self._plane = plane
        self._credentials = credentials

    @as_status
    def SubmitJobs(
        self, request: submit_pb2.JobSubmitRequest, context: grpc.ServicerContext
    ) -> submit_pb2.JobSubmitResponse:
        ids = self._plane.commands.submit(request, requestor=requestor(self._credentials, context))
        return submit_pb2.JobSubmitResponse(
            job_response_items=[submit_pb2.JobSubmitResponseItem(job_id=i) for i in ids]
        )

    @as_status
    def CancelJobs(
        self, request: submit_pb2.JobCancelRequest, context: grpc.ServicerContext
    ) -> submit_pb2.CancellationResult:
        ids = list(request.job_ids) + [request.job_id]  # Armada's order (submit/submit.go)
        cancelled = self._plane.commands.cancel_jobs(
            request.queue, request.job_set_id, ids, request.reason, requestor=requestor(self._credentials, context)
        )
        return submit_pb2.CancellationResult(cancelled_ids=cancelled)

    @as_status
    def CancelJobSet(self, request: submit_pb2.JobSetCancelRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        who = requestor(self._credentials, context)
        self._plane.commands.cancel_job_set(
            request.queue, request.job_set_id, request.reason, request.filter.states, requestor=who
        )
        return empty_pb2.Empty()

    @as_status
    def PreemptJobs(
        self, request: submit_pb2.JobPreemptRequest, context: grpc.ServicerContext
    ) -> submit_pb2.PreemptionResult:
        ids, who = list(request.job_ids), requestor(self._credentials, context)
        results = self._plane.commands.preempt(request.queue, request.job_set_id, ids, request.reason, requestor=who)
        return submit_pb2.PreemptionResult(preemption_results=results)

    @as_status
    def ReprioritizeJobs(
        self, request: submit_pb2.JobReprioritizeRequest, context: grpc.ServicerContext
    ) -> submit_pb2.JobReprioritizeResponse:
        ids, who = list(request.job_ids), requestor(self._credentials, context)
        results = self._plane.commands.reprioritize(
            request.queue, request.job_set_id, ids, request.new_priority, requestor=who
        )
        return submit_pb2.JobReprioritizeResponse(reprioritization_results=results)

    def Health(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> health_pb2.HealthCheckResponse:
        """SERVING, as Armada always answers; NOT_SERVING while the state can't be written, with why in the
        trailers (`health_reasons`)."""
        failure = self._plane.write_health.failure
        if failure is None:
            return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
        context.set_trailing_metadata(as_metadata(failure.problem(), FIX))
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.NOT_SERVING)


class QueueServicer(_QueueMethods, submit_pb2_grpc.QueueServiceServicer):
    """QueueService has, besides the queue methods, cordoning and acting on every job of a queue."""

    def __init__(self, plane: ControlPlane, credentials: Optional[Credentials]):
        self._plane = plane
        self._credentials = credentials

    @as_status
    def CordonQueue(self, request: submit_pb2.QueueCordonRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._plane.commands.cordon_queue(request.name, True)
        return empty_pb2.Empty()

    @as_status
    def UncordonQueue(self, request: submit_pb2.QueueUncordonRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._plane.commands.cordon_queue(request.name, False)
        return empty_pb2.Empty()

    @as_status
    def CancelOnQueue(self, request: submit_pb2.QueueCancelRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._plane.commands.cancel_on_queue(
            request.name, request.jobStates, request.priorityClasses, requestor=requestor(self._credentials, context)
        )
        return empty_pb2.Empty()

    @as_status
    def PreemptOnQueue(self, request: submit_pb2.QueuePreemptRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._plane.commands.preempt_on_queue(
            request.name, request.priorityClasses, requestor=requestor(self._credentials, context)
        )
        return empty_pb2.Empty()
