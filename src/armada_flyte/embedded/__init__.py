"""The embedded Armada-compatible server: Armada's gRPC API, a scheduler and an executor, in-process.

    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(queues=("flyte",))) as armada:
        ...  # talk to armada.url with armada_client

The heavy parts (grpc, armada_client) load on first use, so the CLI stays quick to start.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Cluster", "NodeSet", "EmbeddedArmada", "EmbeddedConfig", "JobView"]


def __getattr__(name: str) -> Any:
    if name in ("EmbeddedArmada", "JobView"):
        from armada_flyte.embedded import armada

        return getattr(armada, name)
    if name == "EmbeddedConfig":
        from armada_flyte.embedded.config import EmbeddedConfig

        return EmbeddedConfig
    if name in ("Cluster", "NodeSet"):
        from armada_flyte.cluster import cluster_file as cluster

        return getattr(cluster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
