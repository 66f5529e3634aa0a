"""Event.GetJobSetEvents: one stream per job set, resumable from a message id, long-polling in watch mode."""

from __future__ import annotations

import re
import threading

import grpc
import pytest
from armada_client.armada import event_pb2, submit_pb2
from armada_client.client import ArmadaClient

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
    # The client's stream asks with errorIfMissing: real Armada answers NOT_FOUND until its event ingester
    # has written the job set's first event, a moment after the submit.
    wait_until(lambda: job_set_events(client, queue, job_set), what="the job set's first event")
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
    assert f"Jobset {request.id} for queue {queue} does not exist" in error.value.details()


def test_events_of_an_unknown_queue_are_not_found(client: ArmadaClient) -> None:
    request = event_pb2.JobSetRequest(queue=unique("nowhere"), id="any", watch=False)
    with pytest.raises(grpc.RpcError) as error:
        list(client.event_stub.GetJobSetEvents(request))
    assert error.value.code() == grpc.StatusCode.NOT_FOUND  # GetJobSetEvents in internal/server/event/event.go
    assert f"Queue {request.queue} does not exist" in error.value.details()


def test_watching_a_missing_job_set_is_not_found(client: ArmadaClient, queue: str) -> None:
    missing = unique("never")
    stream = client.event_stub.Watch(event_pb2.WatchRequest(queue=queue, job_set_id=missing))
    with pytest.raises(grpc.RpcError) as error:
        list(stream)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND  # Watch sets ErrorIfMissing (event/event.go)
    assert f"Jobset {missing} for queue {queue} does not exist" in error.value.details()


def test_message_ids_read_ms_seq_subseq_last(client: ArmadaClient, queue: str, job_set: str) -> None:
    client.submit_jobs(queue, job_set, [item(pod(["true"])), item(pod(["true"]))])
    messages = wait_until(lambda: (m := job_set_events(client, queue, job_set)) and len(m) >= 4 and m)
    # ExternalSeqNo in internal/server/event/sequence/sequence.go; ReadEvents in event_repository.go
    # numbers the events of one stored entry from 0 and marks the entry's last with 1
    assert all(re.fullmatch(r"\d+:\d+:\d+:[01]", m.id) for m in messages)
    entries: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for m in messages:
        ms, seq, subseq, last = m.id.split(":")
        entries.setdefault((ms, seq), []).append((int(subseq), last))
    for numbered in entries.values():
        assert [n for n, _ in numbered] == list(range(len(numbered)))
        assert [flag for _, flag in numbered] == ["0"] * (len(numbered) - 1) + ["1"]
    # one request is one event sequence: its jobs' submitted and queued events share an entry
    assert len({tuple(m.id.split(":")[:2]) for m in messages[:4]}) == 1


def test_an_unparsable_message_id_is_unknown(client: ArmadaClient, queue: str, job_set: str) -> None:
    submit_one(client, queue, job_set, item(pod(["true"])))
    request = event_pb2.JobSetRequest(queue=queue, id=job_set, from_message_id="not-an-id")
    with pytest.raises(grpc.RpcError) as error:
        list(client.event_stub.GetJobSetEvents(request))
    assert error.value.code() == grpc.StatusCode.UNKNOWN  # event.go wraps the parse error unconverted
    assert "Could not convert legacy message id" in error.value.details()


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


WATCHES = 1000
"""Far past the 48 a thread per watch allowed; benchmarks/bench_watches.py measures 5,000."""


@pytest.mark.embedded_only
def test_thousands_of_watches_wait_at_once_and_other_calls_still_answer(
    client: ArmadaClient, queue: str, job_set: str
) -> None:
    submit_one(client, queue, job_set, item(pod(["true"])))
    request = event_pb2.JobSetRequest(queue=queue, id=job_set, watch=True)
    streams = [client.event_stub.GetJobSetEvents(request) for _ in range(WATCHES)]
    try:
        assert [first_event(stream) for stream in streams] == ["submitted"] * WATCHES
        assert client.submit_stub.GetQueue(submit_pb2.QueueGetRequest(name=queue), timeout=2).name == queue
        later = submit_one(client, queue, job_set, item(pod(["true"])))
        assert all(_next_of_job(stream, later) for stream in streams[:: WATCHES // 20])
    finally:
        for stream in streams:
            stream.cancel()
    assert watch_is_served(client, request)


def _next_of_job(stream, job_id: str) -> bool:
    """Whether the watch goes on to deliver an event of `job_id` (it is still being served)."""
    for message in stream:
        if getattr(message.message, kind(message)).job_id == job_id:
            return True
    return False
