"""Fixtures for the conformance suite: an Armada endpoint, a client over a real socket, a queue and job set.

The suite talks to Armada only through armada_client. By default it starts the embedded server
(default cluster: 2 amd64 nodes, 2 arm64 nodes tainted kubernetes.io/arch=arm64:NoSchedule,
4 cpu each; 16Gi of memory on amd64, 8Gi on arm64). With `--armada real` it runs against real Armada
instead: ARMADA_URL=host:port when set, else a bed of its own from scripts/real-armada.sh
(`support.real_armada`, docs/real-armada.md).
Tests that look behind the API (processes, sandboxes, clusters of their own) are marked
`embedded_only` and skip there, as do tests that start a server of their own. Tests real Armada does
otherwise are xfails there, with the cause (`support.real_armada`, DIFFERS_ON_REAL_ARMADA;
scripts/differential-report.py tabulates them). See docs/embedded-server.md.
"""

from __future__ import annotations

import os
import pathlib
import uuid
from typing import Callable, Iterator, Optional

import grpc
import pytest
from armada_client.client import ArmadaClient

from armada_flyte.embedded import Cluster, EmbeddedArmada, EmbeddedConfig

from support.armada_channels import armada_channel
from support.real_armada import mark_known_failures, on_real_armada, wait_until_queue_accepts

SUITE = pathlib.Path(__file__).parent
CONFORMANCE_QUEUE = os.environ.get("ARMADA_TEST_QUEUE", "conformance")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not on_real_armada(config):
        return
    skip = pytest.mark.skip(reason="needs the embedded server (the suite runs against real Armada)")
    own_server = pytest.mark.skip(reason="talks to a server of its own, not to the suite's Armada")
    for item in items:
        if SUITE not in item.path.parents:
            continue  # the hook sees the whole session's tests; only this folder's are the suite
        if "embedded_only" in item.keywords:
            item.add_marker(skip)
        elif "any_armada" in item.keywords:
            continue  # finds the suite's Armada by its own means
        elif "armada_url" not in getattr(item, "fixturenames", ()):
            item.add_marker(own_server)
    mark_known_failures(config, [item for item in items if SUITE in item.path.parents])


@pytest.fixture(scope="session")
def embedded_armada(request: pytest.FixtureRequest) -> Iterator[EmbeddedArmada]:
    """The shared embedded server (default cluster, process pod runner)."""
    if on_real_armada(request.config):
        pytest.skip("the suite runs against real Armada")
    with EmbeddedArmada(EmbeddedConfig(queues=(CONFORMANCE_QUEUE,))) as armada:
        yield armada


@pytest.fixture(scope="session")
def armada_url(request: pytest.FixtureRequest) -> str:
    """Where the suite's Armada listens: real Armada (ARMADA_URL or a bed), or the shared embedded server."""
    if on_real_armada(request.config):
        return request.getfixturevalue("real_armada")["ARMADA_URL"]
    return request.getfixturevalue("embedded_armada").url


@pytest.fixture(scope="session")
def client(armada_url: str) -> Iterator[ArmadaClient]:
    channel = armada_channel(armada_url)
    yield ArmadaClient(channel)
    channel.close()


@pytest.fixture(scope="session")
def queue(client: ArmadaClient, request: pytest.FixtureRequest) -> str:
    """A queue the suite submits to (CreateQueue is an upsert in Armada, so this also works when it exists).

    Real Armada's server sees a new queue only after its queue cache refresh: wait for a submit to pass.
    """
    client.create_queue(client.create_queue_request(CONFORMANCE_QUEUE, priority_factor=1.0))
    if on_real_armada(request.config):
        wait_until_queue_accepts(client, CONFORMANCE_QUEUE)
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
        channel = armada_channel(armada.url)
        started.append((armada, channel))
        return armada, ArmadaClient(channel)

    yield start
    for armada, channel in started:
        channel.close()
        armada.stop()
