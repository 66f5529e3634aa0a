"""How a client reaches Armada over gRPC: its channels, the `authorization` metadata, calls of at most
`MAX_IDS_PER_CALL` ids.

The one place channels are built, so the connector (grpc.aio), the doctor and the local view
(sync gRPC) reach an Armada the same way; light enough for the view to import without the
connector's submit path.
"""

from __future__ import annotations

from typing import Any

import grpc

from armada_flyte.armada_names import MAX_IDS_PER_CALL
from armada_flyte.connector.config.settings_groups import ArmadaConnection

MAX_RECEIVE_BYTES = 64 * 1024 * 1024
OWN_SUBCHANNELS = ("grpc.use_local_subchannel_pool", 1)
"""Each channel connects on its own. gRPC otherwise shares connections (subchannels) between the process's
channels with the same target and options: a new channel to a server that came back on the same address
inherited the failures and back-off of an older channel that kept calling the one that went, and its calls
failed UNAVAILABLE ("Connection refused") while the new server was listening."""
KEEPALIVE_TIMEOUT_SECONDS = 10.0
"""How long a keepalive ping may go unanswered before the connection is closed (and made again)."""


def open_channel(settings: ArmadaConnection, target: str, *, aio: bool) -> Any:
    """A channel to `target` with the connector's transport: TLS (with its CA bundle) or plaintext.

    `aio` picks grpc.aio (the connector) or the sync API (the doctor, the view, armada_client's sync client).
    Keepalive pings go only to the Armada API (its event streams are what may go quiet): Armada's Binoculars
    allows a ping only every 5 minutes, and none without a call (config/binoculars/config.yaml), so pings
    would get its connections closed with too_many_pings.
    """
    api = grpc.aio if aio else grpc
    options: list[tuple[str, int]] = [("grpc.max_receive_message_length", MAX_RECEIVE_BYTES), OWN_SUBCHANNELS]
    if target == settings.armada_url:
        options += keepalive_options(settings)
    if not settings.armada_tls:
        return api.insecure_channel(target, options=options)
    roots = settings.armada_ca_cert.read_bytes() if settings.armada_ca_cert else None
    return api.secure_channel(target, grpc.ssl_channel_credentials(roots), options=options)


def keepalive_options(settings: ArmadaConnection) -> list[tuple[str, int]]:
    """Client keepalive within Armada's enforcement policy (minTime 10 s, permitWithoutStream: true): a ping
    every `grpc_keepalive_seconds`, also with no call open and on a stream that sends nothing (gRPC's
    default stops after two pings without data, which would leave a silent watch unchecked)."""
    return [
        ("grpc.keepalive_time_ms", int(settings.grpc_keepalive_seconds * 1000)),
        ("grpc.keepalive_timeout_ms", int(KEEPALIVE_TIMEOUT_SECONDS * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def authorization_metadata(header: str) -> list[tuple[str, str]]:
    """The call metadata carrying an `authorization` header value (none for "": no credentials)."""
    return [("authorization", header)] if header else []


def id_chunks(ids: list[str]) -> list[list[str]]:
    """`ids` in calls Armada accepts: at most `MAX_IDS_PER_CALL` ids each."""
    return [ids[i : i + MAX_IDS_PER_CALL] for i in range(0, len(ids), MAX_IDS_PER_CALL)]
