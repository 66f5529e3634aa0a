"""Run Flyte 2 tasks as Armada jobs, placed on the right CPU architecture.

Importing the package is cheap: it only exposes the task-authoring surface. The connector,
the embedded server and the CLI live in their own modules and load the heavy parts
(armada_client, grpc) when they are imported.
"""

from __future__ import annotations

from armada_flyte.proto_alias import alias_vendored_google_api

alias_vendored_google_api()

from armada_flyte.architecture import Architecture  # noqa: E402
from armada_flyte.errors import (  # noqa: E402
    ArchitectureConflict,
    ArchitectureNotOffered,
    ArmadaFlyteError,
    GangCardinalityMismatch,
    ImagePlatformMismatch,
    InvalidConfig,
    NoCommonArchitecture,
)
from armada_flyte.spec import ArmadaConfig  # noqa: E402
from armada_flyte.task.gang import Gang  # noqa: E402
from armada_flyte.task.plugin import ArmadaFunctionTask  # noqa: E402
from armada_flyte.task.runtime_image import runtime_image  # noqa: E402

__version__ = "0.1.0"


def configure(**settings: object) -> None:
    """Set connector settings in code (highest precedence); applied when the connector next resolves them."""
    from armada_flyte.connector.config.settings import configure as _configure

    _configure(**settings)


__all__ = [
    "Architecture",
    "ArchitectureConflict",
    "ArchitectureNotOffered",
    "ArmadaConfig",
    "ArmadaFlyteError",
    "ArmadaFunctionTask",
    "Gang",
    "GangCardinalityMismatch",
    "ImagePlatformMismatch",
    "InvalidConfig",
    "NoCommonArchitecture",
    "configure",
    "runtime_image",
]
