"""The backend's service config in deploy/flyte spreads calls over every connector address, one call at a time.

gRPC's C core (Python's) reads a service config's `loadBalancingConfig` as grpc-go (Flyte's backend)
does; an `ipv4:` target with two addresses stands in for the headless Service's DNS answer.
"""

from __future__ import annotations

import collections
import contextlib
import time
from concurrent import futures
from typing import Iterator

import grpc
import pytest

from armada_flyte.spec import TASK_TYPE

SERVICE = "armada_flyte.tests.Replica"


@contextlib.contextmanager
def _replica(name: str) -> Iterator[int]:
    """A gRPC server on a free port of 127.0.0.1 whose one method answers with its name."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: name.encode())
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(SERVICE, {"Name": handler})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(grace=None)


@pytest.fixture
def two_replicas() -> Iterator[str]:
    """The multi-address target naming two replicas, `a` and `b`."""
    with _replica("a") as first, _replica("b") as second:
        yield f"ipv4:127.0.0.1:{first},127.0.0.1:{second}"


def _answers(channel: grpc.Channel, calls: int) -> collections.Counter:
    name = channel.unary_unary(f"/{SERVICE}/Name")
    return collections.Counter(name(b"", timeout=10, wait_for_ready=True).decode() for _ in range(calls))


def _until_both_answer(channel: grpc.Channel, within: float = 30) -> None:
    """Round robin uses a replica once its connection is up; the second may come up a moment later."""
    seen: collections.Counter = collections.Counter()
    deadline = time.monotonic() + within
    while len(seen) < 2:
        assert time.monotonic() < deadline, f"only {dict(seen)} answered in {within} s"
        seen += _answers(channel, 1)


def test_the_routings_service_config_sends_each_call_to_the_next_replica(two_replicas, load_yaml):
    deployment = load_yaml("flyte/connector-routing.yaml")["plugins"]["connector-service"]["connectors"][TASK_TYPE]
    options = [("grpc.service_config", deployment["defaultServiceConfig"])]
    with grpc.insecure_channel(two_replicas, options=options) as channel:
        _until_both_answer(channel)
        assert _answers(channel, 20) == {"a": 10, "b": 10}


def test_without_a_service_config_every_call_goes_to_one_replica(two_replicas):
    """gRPC's default policy, pick_first: what the backend does when the routing leaves it out."""
    with grpc.insecure_channel(two_replicas) as channel:
        assert sorted(_answers(channel, 20).values()) == [20]
