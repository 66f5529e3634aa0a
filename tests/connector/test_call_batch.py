"""Concurrent creates share SubmitJobs calls; counted at the embedded server.

Armada validates a whole request and fails it on the first bad item with INVALID_ARGUMENT
(`internal/server/submit/validation/submit_request.go`): a refused item must fail alone.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

import pytest

from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.model.job_request import JobRequest
from armada_flyte.errors import SubmissionRefused


def _job(n: int, resources: bool = True) -> JobRequest:
    quantity = {"cpu": "10m", "memory": "1Mi"}
    container = {"name": "main", "image": "busybox", "command": ["true"]}
    if resources:
        container["resources"] = {"requests": quantity, "limits": quantity}
    return JobRequest(
        pod_spec={"containers": [container], "restartPolicy": "Never"},
        labels={},
        annotations={},
        namespace="default",
        priority=0,
        client_id=f"batch-test-{n}-{resources}",
        outputs_path="",
    )


@pytest.fixture
def paused_armada():
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), paused=True)) as server:
        yield server


def test_concurrent_creates_for_one_job_set_go_out_as_one_call(paused_armada):
    api = ArmadaApi(resolve_settings(armada_url=paused_armada.url, submit_batch_window_seconds=0.05))

    async def create_all() -> list[str]:
        return list(await asyncio.gather(*(api.submit_one("flyte", "together", _job(n)) for n in range(60))))

    ids = asyncio.run(create_all())
    assert len(set(ids)) == 60
    assert paused_armada.calls.count("SubmitJobs") == 1
    assert all(paused_armada.job(job_id) is not None for job_id in ids)


def test_a_refused_item_fails_only_its_own_create(paused_armada):
    api = ArmadaApi(resolve_settings(armada_url=paused_armada.url, submit_batch_window_seconds=0.05))

    async def create_all() -> list:
        jobs = [_job(n) for n in range(20)] + [_job(99, resources=False)]
        return list(
            await asyncio.gather(*(api.submit_one("flyte", "mixed", job) for job in jobs), return_exceptions=True)
        )

    results = asyncio.run(create_all())
    *good, refused = results
    assert all(isinstance(job_id, str) and paused_armada.job(job_id) is not None for job_id in good)
    assert isinstance(refused, SubmissionRefused) and "resources" in str(refused)


def test_batches_are_per_job_set_and_capped(paused_armada):
    api = ArmadaApi(
        resolve_settings(armada_url=paused_armada.url, submit_batch_window_seconds=0.05, submit_batch_max_items=25)
    )

    async def create_all() -> list[str]:
        calls = [api.submit_one("flyte", f"set-{n % 2}", _job(1000 + n)) for n in range(100)]
        return list(await asyncio.gather(*calls))

    ids = asyncio.run(create_all())
    assert len(set(ids)) == 100
    assert paused_armada.calls.count("SubmitJobs") == 4  # 2 job sets x 50 creates, 25 per call
    for job_id, n in zip(ids, range(100)):
        assert paused_armada.job(job_id).job_set == f"set-{n % 2}"


@pytest.mark.pure
def test_creates_gather_while_a_call_is_in_flight_and_go_out_when_it_returns():
    from armada_flyte.connector.armada.call_batch import CallBatcher

    sent: list[int] = []
    release = asyncio.Event()

    async def send(queue: str, job_set: str, items: list[int]) -> list[str]:
        sent.append(len(items))
        if len(sent) == 1:
            await release.wait()  # the first call is slow to return
        return [f"id-{item}" for item in items]

    async def scenario() -> list[str]:
        batcher = CallBatcher(send, window=0.01, max_items=100)
        first = asyncio.ensure_future(batcher.submit("q", "s", 0))
        while not sent:
            await asyncio.sleep(0.005)
        later = [asyncio.ensure_future(batcher.submit("q", "s", n)) for n in range(1, 31)]
        other_set = await batcher.submit("q", "other", 99)  # another job set never waits on this one's call
        await asyncio.sleep(0.05)  # well past the window: the 30 wait for the call in flight
        assert sent == [1, 1] and other_set == "id-99"
        release.set()
        return [await first, *[await f for f in later]]

    ids = asyncio.run(scenario())
    assert ids == [f"id-{n}" for n in range(31)]
    assert sent == [1, 1, 30]


@pytest.mark.pure
def test_with_two_in_flight_a_second_batch_goes_out_while_the_first_is_on_its_way():
    """Against a server slow to answer (real Armada publishes each submit before it answers), a job set may have
    `max_in_flight` calls on their way; past that its creates gather until one returns."""
    from armada_flyte.connector.armada.call_batch import CallBatcher

    sent: list[int] = []
    release = asyncio.Event()

    async def send(queue: str, job_set: str, items: list[int]) -> list[str]:
        sent.append(len(items))
        if len(sent) <= 2:
            await release.wait()  # the first two calls are slow to return
        return [f"id-{item}" for item in items]

    async def until_sent(count: int) -> None:
        while len(sent) < count:
            await asyncio.sleep(0.005)

    async def scenario() -> list[str]:
        batcher = CallBatcher(send, window=0.01, max_items=100, max_in_flight=2)
        first = asyncio.ensure_future(batcher.submit("q", "s", 0))
        await until_sent(1)
        second = [asyncio.ensure_future(batcher.submit("q", "s", n)) for n in range(1, 11)]
        await asyncio.wait_for(until_sent(2), 30)  # goes out though the first call has not returned
        third = [asyncio.ensure_future(batcher.submit("q", "s", n)) for n in range(11, 31)]
        await asyncio.sleep(0.05)  # well past the window: two are in flight, so the 20 wait
        assert sent == [1, 10]
        release.set()
        return [await first, *[await f for f in second + third]]

    ids = asyncio.run(scenario())
    assert ids == [f"id-{n}" for n in range(31)]
    assert sent == [1, 10, 20]


@pytest.mark.pure
def test_a_full_batch_goes_out_even_while_a_call_is_in_flight():
    from armada_flyte.connector.armada.call_batch import CallBatcher

    sent: list[int] = []
    release = asyncio.Event()

    async def send(queue: str, job_set: str, items: list[int]) -> list[str]:
        sent.append(len(items))
        if len(sent) == 1:
            await release.wait()
        return [str(item) for item in items]

    async def scenario() -> None:
        batcher = CallBatcher(send, window=0.01, max_items=10)
        first = asyncio.ensure_future(batcher.submit("q", "s", 0))
        while not sent:
            await asyncio.sleep(0.005)
        full = await asyncio.gather(*(batcher.submit("q", "s", n) for n in range(1, 11)))
        assert full == [str(n) for n in range(1, 11)] and sent == [1, 10]
        release.set()
        assert await first == "0"

    asyncio.run(scenario())


@pytest.mark.pure
def test_with_a_max_wait_a_burst_longer_than_the_window_goes_out_as_one_batch():
    """As an abort's deletes: items keep coming, each within the quiet window of the last; the batch waits
    for a quiet window (bounded by max_wait), where a plain window would have sent several."""
    from armada_flyte.connector.armada.call_batch import CallBatcher

    async def burst(max_wait: float) -> list[int]:
        sent: list[int] = []

        async def send(queue: str, job_set: str, items: list[int]) -> list[None]:
            sent.append(len(items))
            return [None] * len(items)

        batcher = CallBatcher(send, window=1.0, max_items=500, max_wait=max_wait)
        calls = []
        for n in range(60):
            calls.append(asyncio.ensure_future(batcher.submit("q", "s", n)))
            await asyncio.sleep(0.02)  # at least 1.2 s in all: longer than a window, with gaps far shorter
        await asyncio.gather(*calls)
        return sent

    assert asyncio.run(burst(max_wait=10.0)) == [60]
    assert len(asyncio.run(burst(max_wait=0.0))) > 1


def _recorded() -> tuple[list[int], Callable[[str, str, list[int]], Awaitable[list[str]]]]:
    """A send that answers at once and records each call's size."""
    sent: list[int] = []

    async def send(queue: str, job_set: str, items: list[int]) -> list[str]:
        sent.append(len(items))
        return [str(item) for item in items]

    return sent, send


@pytest.mark.pure
def test_by_turns_a_lone_create_goes_out_at_once_and_a_burst_as_one_call():
    """No fixed wait: a lone create goes out as soon as the loop has no other for its job set."""
    from armada_flyte.connector.armada.call_batch import CallBatcher

    sent, send = _recorded()

    async def scenario() -> None:
        batcher = CallBatcher(send, window=0.001, max_items=100, max_wait=60.0, by_turns=True)
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await batcher.submit("q", "s", 0) == "0"
        assert loop.time() - began < 30  # never the 60 s max_wait
        await asyncio.sleep(0.01)  # the burst below is not part of a stream with the lone create
        burst = await asyncio.gather(*(batcher.submit("q", "s", n) for n in range(1, 41)))
        assert burst == [str(n) for n in range(1, 41)]

    asyncio.run(scenario())
    assert sent == [1, 40]


@pytest.mark.pure
def test_by_turns_creates_still_arriving_turn_after_turn_join_the_batch():
    """Creates reaching the batcher a few loop turns apart (each create awaits on its way) share a call."""
    from armada_flyte.connector.armada.call_batch import CallBatcher

    sent, send = _recorded()

    async def create(batcher: CallBatcher, n: int) -> str:
        for _ in range(n):  # the n-th create reaches the batcher n turns later
            await asyncio.sleep(0)
        return await batcher.submit("q", "s", n)

    async def scenario() -> None:
        batcher = CallBatcher(send, window=0.001, max_items=100, max_wait=60.0, by_turns=True)
        await asyncio.gather(*(create(batcher, n) for n in range(10)))

    asyncio.run(scenario())
    assert sent == [10]


@pytest.mark.pure
def test_by_turns_a_stream_of_creates_gathers_until_a_gap_of_one_window():
    """Creates coming one after another, each well within a window of the last: after the first (lone, at
    once), they gather into one call, sent once the stream pauses for a window."""
    from armada_flyte.connector.armada.call_batch import CallBatcher

    sent, send = _recorded()

    async def scenario() -> None:
        batcher = CallBatcher(send, window=0.5, max_items=100, max_wait=60.0, by_turns=True)
        calls = []
        for n in range(20):
            calls.append(asyncio.ensure_future(batcher.submit("q", "s", n)))
            await asyncio.sleep(0.005)
        await asyncio.gather(*calls)

    asyncio.run(scenario())
    assert sent == [1, 19]


@pytest.mark.pure
def test_by_turns_creates_that_never_pause_go_out_max_wait_after_the_first():
    """A stream of creates that never leaves a quiet turn is still sent, `max_wait` after its first."""
    from armada_flyte.connector.armada.call_batch import CallBatcher

    sent, send = _recorded()

    async def scenario() -> None:
        batcher = CallBatcher(send, window=0.05, max_items=100_000, max_wait=0.05, by_turns=True)
        loop = asyncio.get_running_loop()
        calls = []
        until = loop.time() + 0.3
        while loop.time() < until:
            calls.append(asyncio.ensure_future(batcher.submit("q", "s", len(calls))))
            await asyncio.sleep(0)
        await asyncio.gather(*calls)

    asyncio.run(scenario())
    assert len(sent) >= 3 and sum(sent) > len(sent)
