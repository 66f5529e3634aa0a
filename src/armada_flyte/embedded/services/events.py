"""Armada's Event gRPC service: a job set's events, resumable from a message id, long-polled in watch mode.

The streams are coroutines on the server's event loop: a waiting watch is a subscription, not a
thread, so thousands can wait at once while every other call still answers.
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

import grpc
from armada_client.armada import event_pb2, event_pb2_grpc, health_pb2
from google.protobuf import empty_pb2

from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.model.refusals import NotFound, Refusal
from armada_flyte.embedded.services.messages import event_message
from armada_flyte.embedded.store.event_log import parse_message_id

_BATCH = 500
"""Armada reads a stream 500 events at a time (`serveEventsFromRepository` in event/event.go)."""


class EventServicer(event_pb2_grpc.EventServicer):
    def __init__(self, plane: ControlPlane):
        self._plane = plane

    async def GetJobSetEvents(
        self, request: event_pb2.JobSetRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        stream = self._stream(
            request.queue, request.id, request.from_message_id, request.watch, request.errorIfMissing, context
        )
        async for message in stream:
            yield message

    async def Watch(
        self, request: event_pb2.WatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        # Armada's Watch is GetJobSetEvents with watch and errorIfMissing set (event/event.go).
        async for message in self._stream(request.queue, request.job_set_id, request.from_id, True, True, context):
            yield message

    async def Health(
        self, request: empty_pb2.Empty, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)

    async def _stream(
        self,
        queue: str,
        job_set: str,
        from_id: str,
        watch: bool,
        error_if_missing: bool,
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        events = self._plane.events
        try:
            self._check(queue, job_set, from_id, error_if_missing)
        except Refusal as refusal:
            await context.abort(refusal.code, str(refusal))
        loop = asyncio.get_running_loop()
        grown = asyncio.Event()
        unsubscribe = events.watch(queue, job_set, lambda: loop.call_soon_threadsafe(grown.set)) if watch else None
        after = from_id
        try:
            while True:
                grown.clear()
                batch = events.read(queue, job_set, after, _BATCH)
                for message_id, record in batch:
                    yield event_message(message_id, record)
                    after = message_id
                if len(batch) == _BATCH:
                    continue
                if not watch or events.closed:
                    return
                await grown.wait()
        finally:
            if unsubscribe is not None:
                unsubscribe()

    def _check(self, queue: str, job_set: str, from_id: str, error_if_missing: bool) -> None:
        """Armada's order: the queue must exist (NOT_FOUND), the id must parse, then the job set if asked."""
        if queue not in self._plane.queues:
            raise NotFound(f"[GetJobSetEvents] Queue {queue} does not exist")
        parse_message_id(from_id, queue, job_set)
        if error_if_missing and not self._plane.events.exists(queue, job_set):
            raise NotFound(f"[GetJobSetEvents] Jobset {job_set} for queue {queue} does not exist")
