"""Armada's Event gRPC service: a job set's events, resumable from a message id, long-polled in watch mode."""

from __future__ import annotations

import threading
from typing import Iterator

import grpc
from armada_client.armada import event_pb2, event_pb2_grpc, health_pb2
from google.protobuf import empty_pb2

from armada_flyte.embedded.control_plane import ControlPlane
from armada_flyte.embedded.messages import event_message
from armada_flyte.embedded.refusals import InvalidArgument, NotFound, QueueNotFound, Refusal

_WATCH_WAKE_SECONDS = 1.0
"""How often an idle watch checks that its client is still there (new events wake it at once)."""


class _WatchBudget:
    """How many watches may wait at once: each holds a server worker thread while it waits."""

    def __init__(self, limit: int):
        self.limit = limit
        self._open = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self._open >= self.limit:
                return False
            self._open += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self._open -= 1


class EventServicer(event_pb2_grpc.EventServicer):
    def __init__(self, plane: ControlPlane, max_watches: int):
        self._plane = plane
        self._watches = _WatchBudget(max_watches)

    def GetJobSetEvents(
        self, request: event_pb2.JobSetRequest, context: grpc.ServicerContext
    ) -> Iterator[event_pb2.EventStreamMessage]:
        return self._stream(
            request.queue, request.id, request.from_message_id, request.watch, request.errorIfMissing, context
        )

    def Watch(
        self, request: event_pb2.WatchRequest, context: grpc.ServicerContext
    ) -> Iterator[event_pb2.EventStreamMessage]:
        return self._stream(request.queue, request.job_set_id, request.from_id, True, False, context)

    def Health(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> health_pb2.HealthCheckResponse:
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)

    def _stream(
        self, queue: str, job_set: str, from_id: str, watch: bool, error_if_missing: bool, context: grpc.ServicerContext
    ) -> Iterator[event_pb2.EventStreamMessage]:
        events = self._plane.events
        try:
            after = _position(from_id)
            if queue not in self._plane.queues:
                raise QueueNotFound(queue)
            if error_if_missing and not events.exists(queue, job_set):
                raise NotFound(f"job set {job_set} in queue {queue} does not exist")
        except Refusal as refusal:
            context.abort(refusal.code, str(refusal))
        if watch and not self._watches.take():
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"this server serves at most {self._watches.limit} watching event streams at once; "
                "close one, or read without watch and poll",
            )
        context.add_callback(lambda: events.wake(queue, job_set))
        try:
            while context.is_active():
                batch = events.read(queue, job_set, after)
                for position, record in batch:
                    yield event_message(position, record)
                    after = position
                if not watch or events.closed:
                    return
                if not batch:
                    events.wait(queue, job_set, after, _WATCH_WAKE_SECONDS)
        finally:
            if watch:
                self._watches.give_back()


def _position(message_id: str) -> int:
    if not message_id:
        return 0
    if not message_id.isdigit():
        raise InvalidArgument(f"from_message_id {message_id!r} is not a message id this server gave out")
    return int(message_id)
