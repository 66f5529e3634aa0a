"""The benchmarks' counting proxy: what it counts is what reached the server, and it changes nothing."""

from __future__ import annotations

import pathlib
import sys
from typing import Iterator

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

from support.pods import item, pod, unique

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from counting_proxy import CountingProxy, counting_proxy  # noqa: E402

QUEUE = "flyte"


@pytest.fixture(scope="module")
def armada() -> Iterator[EmbeddedArmada]:
    with EmbeddedArmada(EmbeddedConfig(port=0, queues=(QUEUE,), paused=True)) as server:
        yield server


@pytest.fixture
def proxy(armada: EmbeddedArmada) -> Iterator[CountingProxy]:
    with counting_proxy(armada.url) as running:
        yield running


def test_calls_are_counted_as_the_server_counts_them(armada: EmbeddedArmada, proxy: CountingProxy) -> None:
    before = armada.calls.counts()
    with grpc.insecure_channel(proxy.address) as channel:
        client = ArmadaClient(channel)
        job_set = unique("counted")
        job_id = client.submit_jobs(QUEUE, job_set, [item(pod())]).job_response_items[0].job_id
        client.get_job_status([job_id])
        client.get_job_status([job_id])
    after = armada.calls.counts()
    at_server = {m: after.get(m, 0) - before.get(m, 0) for m in ("SubmitJobs", "GetJobStatus")}
    assert proxy.counts() == at_server == {"SubmitJobs": 1, "GetJobStatus": 2}


def test_submit_requests_are_kept_with_their_batches_until_forgotten(proxy: CountingProxy) -> None:
    with grpc.insecure_channel(proxy.address) as channel:
        client = ArmadaClient(channel)
        client.submit_jobs(QUEUE, unique("kept"), [item(pod()), item(pod()), item(pod())])
        client.submit_jobs(QUEUE, unique("kept"), [item(pod())])
        requests, most_in_flight = proxy.submits()
        proxy.forget_submits()
        assert proxy.submits()[0] == []
    sizes = [len(submit_pb2.JobSubmitRequest.FromString(r).job_request_items) for r in requests]
    assert (sizes, most_in_flight) == ([3, 1], 1)


def test_submits_one_after_another_average_at_most_one_in_flight(proxy: CountingProxy) -> None:
    """The mean is over the time from the first call to the last answer: calls in a row, never
    overlapping, average more than none and at most one; forgetting starts it over."""
    with grpc.insecure_channel(proxy.address) as channel:
        client = ArmadaClient(channel)
        for _ in range(3):
            client.submit_jobs(QUEUE, unique("in-a-row"), [item(pod())])
        mean = proxy.mean_submits_in_flight()
        proxy.forget_submits()
    assert 0 < mean <= 1
    assert proxy.mean_submits_in_flight() == 0.0


def test_an_error_reaches_the_client_with_the_servers_code(armada: EmbeddedArmada, proxy: CountingProxy) -> None:
    codes = []
    for address in (armada.url, proxy.address):
        with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as raised:
            ArmadaClient(channel).submit_jobs("no-such-queue", "errors", [item(pod())])
        codes.append(raised.value.code())
    assert codes[0] == codes[1] != grpc.StatusCode.UNAVAILABLE


def test_an_event_stream_is_forwarded(proxy: CountingProxy) -> None:
    with grpc.insecure_channel(proxy.address) as channel:
        client = ArmadaClient(channel)
        job_set = unique("streamed")
        job_id = client.submit_jobs(QUEUE, job_set, [item(pod())]).job_response_items[0].job_id
        stream = client.get_job_events_stream(QUEUE, job_set)
        first = next(iter(stream))
        stream.cancel()
    assert (first.message.WhichOneof("events"), first.message.submitted.job_id) == ("submitted", job_id)
    assert proxy.counts()["GetJobSetEvents"] == 1
