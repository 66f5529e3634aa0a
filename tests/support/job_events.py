"""Reading a job set's events through Event.GetJobSetEvents, as a client would."""

from __future__ import annotations

from armada_client.armada import event_pb2
from armada_client.client import ArmadaClient


def job_set_events(
    client: ArmadaClient, queue: str, job_set: str, from_id: str = ""
) -> list[event_pb2.EventStreamMessage]:
    """Every event of the job set so far (no watch), after `from_id` if given."""
    request = event_pb2.JobSetRequest(queue=queue, id=job_set, from_message_id=from_id, watch=False)
    return list(client.event_stub.GetJobSetEvents(request))


def kind(message: event_pb2.EventStreamMessage) -> str:
    return message.message.WhichOneof("events")


def job_of(message: event_pb2.EventStreamMessage) -> str:
    return getattr(message.message, kind(message)).job_id


def event_kinds(client: ArmadaClient, queue: str, job_set: str, job_id: str) -> list[str]:
    """The kinds of the job's events, in order (submitted, queued, leased, ...)."""
    return [kind(m) for m in job_set_events(client, queue, job_set) if job_of(m) == job_id]


def failed_event(client: ArmadaClient, queue: str, job_set: str, job_id: str) -> event_pb2.JobFailedEvent:
    """The job's `failed` event, waited for on the job set's watch (it may land just after the state reads FAILED)."""
    for message in client.get_job_events_stream(queue, job_set):
        if kind(message) == "failed" and message.message.failed.job_id == job_id:
            return message.message.failed
    raise AssertionError(f"no failed event for {job_id}")
