"""Fixtures for the conformance suite: an Armada endpoint, a client over a real socket, a queue and job set.

The suite talks to Armada only through armada_client. By default it starts the embedded server
(default cluster: 2 amd64 nodes, 2 arm64 nodes tainted kubernetes.io/arch=arm64:NoSchedule,
4 cpu / 16Gi each). Set ARMADA_URL=host:port to run it against a real Armada with the same
node groups instead; tests that look behind the API (processes, sandboxes, clusters of their
own) are marked `embedded_only` and skip there. See docs/embedded-server.md.
"""

from __future__ import annotations

import os
import uuid
from typing import Callable, Iterator, Optional

import grpc
import pytest
from armada_client.client import ArmadaClient

from armada_flyte.embedded import Cluster, EmbeddedArmada, EmbeddedConfig

ARMADA_URL = os.environ.get("ARMADA_URL", "")
CONFORMANCE_QUEUE = os.environ.get("ARMADA_TEST_QUEUE", "conformance")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not ARMADA_URL:
        return
    skip = pytest.mark.skip(reason="needs the embedded server (ARMADA_URL points at a real Armada)")
    for item in items:
        if "embedded_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def embedded_armada() -> Iterator[EmbeddedArmada]:
    """The shared embedded server (default cluster, process executor)."""
    if ARMADA_URL:
        pytest.skip("ARMADA_URL points at a real Armada")
    with EmbeddedArmada(EmbeddedConfig(queues=(CONFORMANCE_QUEUE,))) as armada:
        yield armada


@pytest.fixture(scope="session")
def armada_url(request: pytest.FixtureRequest) -> str:
    """Where the suite's Armada listens: ARMADA_URL, or the shared embedded server."""
    if ARMADA_URL:
        return ARMADA_URL
    return request.getfixturevalue("embedded_armada").url


@pytest.fixture(scope="session")
def client(armada_url: str) -> Iterator[ArmadaClient]:
    channel = grpc.insecure_channel(armada_url)
    yield ArmadaClient(channel)
    channel.close()


@pytest.fixture(scope="session")
def queue(client: ArmadaClient) -> str:
    """A queue the suite submits to (CreateQueue is an upsert in Armada, so this also works when it exists)."""
    client.create_queue(client.create_queue_request(CONFORMANCE_QUEUE, priority_factor=1.0))
    return CONFORMANCE_QUEUE


@pytest.fixture
def job_set(client: ArmadaClient, queue: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A job set of this test's own; whatever is left running in it is cancelled afterwards."""
    name = f"{request.node.name[:60]}-{uuid.uuid4().hex[:8]}"
    yield name
    client.cancel_jobset(queue, name, [])


@pytest.fixture
def own_armada() -> Iterator[Callable[..., tuple[EmbeddedArmada, ArmadaClient]]]:
    """Start an embedded server of the test's own (its own cluster, options); stopped after the test."""
    started: list[tuple[EmbeddedArmada, grpc.Channel]] = []

    def start(cluster: Optional[dict] = None, **options: object) -> tuple[EmbeddedArmada, ArmadaClient]:
        model = Cluster.from_mapping(cluster) if cluster is not None else None
        armada = EmbeddedArmada(EmbeddedConfig(cluster=model, queues=(CONFORMANCE_QUEUE,), **options)).start()
        channel = grpc.insecure_channel(armada.url)
        started.append((armada, channel))
        return armada, ArmadaClient(channel)

    yield start
    for armada, channel in started:
        channel.close()
        armada.stop()
