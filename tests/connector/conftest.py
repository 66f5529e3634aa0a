"""The connector against the embedded Armada server over a real gRPC socket on 127.0.0.1."""

from __future__ import annotations

import pytest

import armada_flyte


@pytest.fixture(scope="module")
def armada():
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte", "other"))) as server:
        yield server


@pytest.fixture
def connector(armada):
    from armada_flyte.connector.service import ArmadaConnector

    from support.armada_templates import run

    armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded", ack_timeout_seconds=30)
    connector = ArmadaConnector()
    yield connector
    run(connector.close())


@pytest.fixture(scope="module")
def blob():
    from armada_flyte.local.stack import LocalBlobServer

    store = LocalBlobServer().start()
    yield store
    store.stop()


@pytest.fixture
def c0(armada, blob, tmp_path):
    """A real `c0` process serving the connector, against the embedded Armada and the blob store."""
    from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

    from support.c0_service import running_c0

    env = {
        "ARMADA_URL": armada.url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "FLYTE_BLOB_ENDPOINT": blob.endpoint,
        "FLYTE_BLOB_ACCESS_KEY": ACCESS_KEY,
        "FLYTE_BLOB_SECRET_KEY": SECRET_KEY,
        "ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET": BLOB_CREDENTIALS_SECRET,
    }
    armada.add_secret(BLOB_CREDENTIALS_SECRET, {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY})
    with running_c0(env, tmp_path / "c0.log") as stub:
        yield stub
