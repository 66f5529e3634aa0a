"""The connector against Armada over a real gRPC socket on 127.0.0.1: the embedded server, or with
`--armada real` real Armada on a bed (`support.real_armada`), whose executor (ours) runs the pods
and holds the blob keys. Tests that look behind the API are marked `embedded_only` and skip there.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import armada_flyte

from support.real_armada import ensure_queues, uses_real_armada

QUEUES = ("flyte", "other")


@dataclass(frozen=True)
class RealArmada:
    """Real Armada on the session's bed; its Secrets are the bed's (`bed_secrets`), fixed at start."""

    url: str


@pytest.fixture(scope="module")
def armada(request: pytest.FixtureRequest):
    """The Armada the connector talks to, with the queues flyte and other."""
    if uses_real_armada(request.config):
        url = request.getfixturevalue("real_armada")["ARMADA_URL"]
        ensure_queues(url, QUEUES)
        yield RealArmada(url)
        return
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=QUEUES)) as server:
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
def c0(armada, blob, tmp_path, request: pytest.FixtureRequest):
    """A real `c0` process serving the connector, against the embedded Armada and the blob store."""
    from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

    from support.c0_service import c0_env, running_c0

    env = c0_env(armada.url, blob.endpoint)
    if not uses_real_armada(request.config):  # a bed's executor holds it from the start (bed_secrets)
        armada.add_secret(BLOB_CREDENTIALS_SECRET, {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY})
    with running_c0(env, tmp_path / "c0.log") as stub:
        yield stub


@pytest.fixture
def store(armada):
    """A blob store of the test's own, its keys in the Secret the connector names to pods
    (`BLOB_CREDENTIALS_SECRET`)."""
    from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY, LocalBlobServer

    armada.add_secret(BLOB_CREDENTIALS_SECRET, {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY})
    server = LocalBlobServer().start()
    yield server
    server.stop()
