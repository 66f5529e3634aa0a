"""The floors: what the raw `armada_client` takes to do the connector's Armada work, on the same server.

`resubmit` sends the SubmitJobs requests the connector sent (same items, same batches, as many calls in
flight as the connector had), each job with a fresh client id so Armada makes new jobs rather than
answering from its deduplication. `submit_and_watch` submits one request's pod and reads its job set's
events until the job succeeds, as a client of Armada with nothing else to do would.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import grpc
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.typings import JobState
from armada_under_test import armada_channel

ENDED = frozenset({"failed", "cancelled", "preempted"})
REOPEN_SECONDS = 0.02


def job_set_of(request: bytes) -> str:
    return submit_pb2.JobSubmitRequest.FromString(request).job_set_id


def _fresh(request: bytes, job_set: str) -> submit_pb2.JobSubmitRequest:
    parsed = submit_pb2.JobSubmitRequest.FromString(request)
    parsed.job_set_id = job_set
    for item in parsed.job_request_items:
        if item.client_id:
            item.client_id = uuid.uuid4().hex
    return parsed


def resubmit(url: str, requests: list[bytes], in_flight: int, label: str) -> tuple[float, int]:
    """Send `requests` again (job sets renamed `<label>-<name>`), at most `in_flight` at once; returns
    the jobs per second and how many calls failed."""
    prepared = [_fresh(r, f"{label}-{job_set_of(r)}") for r in requests]
    items = sum(len(r.job_request_items) for r in prepared)
    with armada_channel(url) as channel, ThreadPoolExecutor(max(1, in_flight)) as pool:
        client = ArmadaClient(channel)

        def send(request: submit_pb2.JobSubmitRequest) -> bool:
            try:
                client.submit_jobs(request.queue, request.job_set_id, list(request.job_request_items))
                return True
            except grpc.RpcError:
                return False

        began = time.perf_counter()
        answered = list(pool.map(send, prepared))
        seconds = time.perf_counter() - began
    return items / seconds, answered.count(False)


def watching_client(channel: grpc.Channel, timeout: float = 120) -> ArmadaClient:
    """A raw client whose event streams give up after `timeout` seconds without an event."""
    return ArmadaClient(channel, event_timeout=timedelta(seconds=timeout))


def submit_and_watch(client: ArmadaClient, request: bytes, job_set: str) -> float:
    """Seconds from submitting `request`'s first job (in `job_set`) to its `succeeded` event. Real Armada
    answers NOT_FOUND until the job set's first event is stored, so the watch reopens until it is."""
    prepared = _fresh(request, job_set)
    del prepared.job_request_items[1:]
    began = time.perf_counter()
    job_id = client.submit_jobs(prepared.queue, job_set, list(prepared.job_request_items)).job_response_items[0].job_id
    while True:
        try:
            for message in client.get_job_events_stream(prepared.queue, job_set):
                kind = message.message.WhichOneof("events")
                event = getattr(message.message, kind)
                if event.job_id != job_id:
                    continue
                if kind == "succeeded":
                    return time.perf_counter() - began
                if kind in ENDED:
                    raise RuntimeError(f"the raw client's job {job_id} ended {kind}: {event}")
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise
            time.sleep(REOPEN_SECONDS)
            continue
        raise RuntimeError(f"the raw client's job {job_id}: its event stream ended before it succeeded")


def cancel_job_sets(url: str, queue: str, job_sets: set[str]) -> None:
    """Cancel what a benchmark left queued on a shared server, so an executor started later doesn't run it."""
    with armada_channel(url) as channel:
        client = ArmadaClient(channel)
        for job_set in sorted(job_sets):
            client.cancel_jobset(queue, job_set, [JobState.QUEUED, JobState.LEASED, JobState.PENDING, JobState.RUNNING])
