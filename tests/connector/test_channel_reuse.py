"""A server that comes back on the same address is reached by a new client at once, whatever an older client
of the address did meanwhile (gRPC shares connections between a process's channels unless told not to)."""

from __future__ import annotations

import asyncio

from armada_flyte.armada_names import JobState
from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.errors import ArmadaUnavailable


def test_a_new_client_reaches_a_server_back_on_the_same_port_while_an_old_one_still_fails():
    """An old client keeps calling a server that went (as a connector nobody closed does); a new server takes the
    same port; a new client's first call is answered, not refused with the old client's connection failure."""
    config = EmbeddedConfig(port=0, queues=("flyte",), paused=True)
    first = EmbeddedArmada(config).__enter__()
    port, url = first.port, first.url
    old = ArmadaApi(resolve_settings(armada_url=url, grpc_retries=0))

    async def story() -> dict[str, int]:
        await old.status(["01-none"])
        first.stop()
        for _ in range(3):  # its connection fails, and gRPC backs off before the next try
            try:
                await old.status(["01-none"])
            except ArmadaUnavailable:
                pass
        with EmbeddedArmada(EmbeddedConfig(port=port, queues=("flyte",), paused=True)):
            new = ArmadaApi(resolve_settings(armada_url=url, grpc_retries=0))
            try:
                return await new.status(["01-none"])
            finally:
                await new.close()

    try:
        # Armada's answer for an id it doesn't know; before each channel had connections of its own, the new
        # client's call failed UNAVAILABLE with the old one's "Connection refused"
        assert asyncio.run(story()) == {"01-none": JobState.UNKNOWN}
    finally:
        first.stop()
