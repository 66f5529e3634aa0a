"""Event.GetJobSetEvents: one stream per job set, resumable from a message id, long-polling in watch mode."""

from __future__ import annotations

import threading

import grpc
import pytest
from armada_client.armada import event_pb2, submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.embedded.server import MAX_WATCHES

from support.job_events import job_set_events, kind
from support.pods import item, pod, submit_one, unique
from support.waiting import wait_for_state, wait_until


def test_resuming_from_a_message_id_gives_only_later_events(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(["true"])))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    everything = wait_until(lambda: (e := job_set_events(client, queue, job_set)) and kind(e[-1]) == "succeeded" and e)
    later = job_set_events(client, queue, job_set, from_id=everything[1].id)
    assert [m.id for m in later] == [m.id for m in everything[2:]]


def test_watch_delivers_events_that_happen_after_it_starts(client: ArmadaClient, queue: str, job_set: str) -> None:
    received: list[str] = []
    done = threading.Event()
    stream = client.event_stub.GetJobSetEvents(event_pb2.JobSetRequest(queue=queue, id=job_set, watch=True))

    def read() -> None:
        try:
            for message in stream:
                received.append(kind(message))
                if kind(message) == "succeeded":
                    done.set()
        except grpc.RpcError:
            pass  # cancelled below

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    submit_one(client, queue, job_set, item(pod(["true"])))
    assert done.wait(15), f"watch saw only {received}"
    stream.cancel()
    reader.join(5)
    assert received[:2] == ["submitted", "queued"]


def test_resilient_client_stream_reads_a_job_to_its_end(client: ArmadaClient, queue: str, job_set: str) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(["true"])))
    stream = client.get_job_events_stream(queue, job_set)
    kinds = []
    for message in stream:
        event = client.unmarshal_event_response(message)
        assert event.message.job_id == job_id
        kinds.append(event.type.value)
        if event.type.value == "succeeded":
            break
    stream.cancel()
    assert kinds[0] == "submitted" and kinds[-1] == "succeeded"


def test_missing_job_set_is_not_found_when_asked_to_error(client: ArmadaClient, queue: str) -> None:
    request = event_pb2.JobSetRequest(queue=queue, id=unique("never"), watch=False, errorIfMissing=True)
    with pytest.raises(grpc.RpcError) as error:
        list(client.event_stub.GetJobSetEvents(request))
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_events_of_an_unknown_queue_are_refused(client: ArmadaClient) -> None:
    request = event_pb2.JobSetRequest(queue=unique("nowhere"), id="any", watch=False)
    with pytest.raises(grpc.RpcError) as error:
        list(client.event_stub.GetJobSetEvents(request))
    assert error.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_health_reports_serving(client: ArmadaClient) -> None:
    assert client.submit_health().status == client.submit_health().SERVING
    assert client.event_health().status == client.event_health().SERVING


def first_event(stream) -> str:
    """The kind of the stream's first message, or the status code that refused it."""
    try:
        return kind(next(stream))
    except grpc.RpcError as error:
        return error.code().name


def watch_is_served(client: ArmadaClient, request: event_pb2.JobSetRequest) -> bool:
    stream = client.event_stub.GetJobSetEvents(request)
    try:
        return first_event(stream) == "submitted"
    finally:
        stream.cancel()


@pytest.mark.embedded_only
def test_watches_beyond_the_limit_are_refused_and_other_calls_still_answer(
    client: ArmadaClient, queue: str, job_set: str
) -> None:
    submit_one(client, queue, job_set, item(pod(["true"])))
    request = event_pb2.JobSetRequest(queue=queue, id=job_set, watch=True)
    streams = [client.event_stub.GetJobSetEvents(request) for _ in range(MAX_WATCHES + 2)]
    try:
        answers = [first_event(stream) for stream in streams]
        assert answers.count("submitted") == MAX_WATCHES
        assert answers.count("RESOURCE_EXHAUSTED") == 2
        assert client.submit_stub.GetQueue(submit_pb2.QueueGetRequest(name=queue), timeout=2).name == queue
    finally:
        for stream in streams:
            stream.cancel()
    wait_until(lambda: watch_is_served(client, request), what="a watch to be served again")
