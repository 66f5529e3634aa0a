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


def open_channel(settings: ArmadaConnection, target: str, *, aio: bool) -> Any:
    """A channel to `target` with the connector's transport: TLS (with its CA bundle) or plaintext.

    `aio` picks grpc.aio (the connector) or the sync API (the doctor, the view, armada_client's sync client).
    """
    api = grpc.aio if aio else grpc
    options = [("grpc.max_receive_message_length", MAX_RECEIVE_BYTES)]
    if not settings.armada_tls:
        return api.insecure_channel(target, options=options)
    roots = settings.armada_ca_cert.read_bytes() if settings.armada_ca_cert else None
    return api.secure_channel(target, grpc.ssl_channel_credentials(roots), options=options)


def authorization_metadata(header: str) -> list[tuple[str, str]]:
    """The call metadata carrying an `authorization` header value (none for "": no credentials)."""
    return [("authorization", header)] if header else []


def id_chunks(ids: list[str]) -> list[list[str]]:
    """`ids` in calls Armada accepts: at most `MAX_IDS_PER_CALL` ids each."""
    return [ids[i : i + MAX_IDS_PER_CALL] for i in range(0, len(ids), MAX_IDS_PER_CALL)]
