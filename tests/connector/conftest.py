"""The connector against the embedded Armada server over a real gRPC socket on 127.0.0.1."""

from __future__ import annotations

import pytest

import armada_flyte


@pytest.fixture(scope="module")
def armada():
    from armada_flyte.embedded import EmbeddedArmada

    with EmbeddedArmada(port=0, queues=("flyte", "other")) as server:
        yield server


@pytest.fixture
def connector(armada):
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded", ack_timeout_seconds=30)
    return ArmadaConnector()
