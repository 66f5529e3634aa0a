"""The embedded Armada-compatible server: Armada's gRPC API, a scheduler and an executor, in-process.

    from armada_flyte.embedded import EmbeddedArmada

    with EmbeddedArmada() as armada:
        ...  # talk to armada.url with armada_client

The heavy parts (grpc, armada_client) load on first use, so the CLI stays quick to start.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Cluster", "EmbeddedArmada", "JobView", "ClusterNodeGroup"]


def __getattr__(name: str) -> Any:
    if name in ("EmbeddedArmada", "JobView"):
        from armada_flyte.embedded import embedded

        return getattr(embedded, name)
    if name in ("Cluster", "ClusterNodeGroup"):
        from armada_flyte.embedded import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
