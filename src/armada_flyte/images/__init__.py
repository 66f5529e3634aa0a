"""Container images: which platforms an image supports, and the multi-arch runtime image.

`image_platforms(ref)` reads a registry's HTTP API, `platforms_via_docker(ref)` asks a Docker
daemon, `ImagePlatformCheck` is the connector's submission-time check. Importing this package
loads neither httpx nor the Docker SDK until they are used.
"""

from __future__ import annotations

from armada_flyte.images.errors import (
    DockerDaemonUnavailable,
    ImageNotFound,
    InvalidImageReference,
    RegistryAuthFailed,
    RegistryError,
    RegistryProtocolError,
    RegistryUnreachable,
)
from armada_flyte.images.platforms import ImagePlatforms, Platform
from armada_flyte.images.reference import ImageReference

__all__ = [
    "DockerDaemonUnavailable",
    "ImageNotFound",
    "ImagePlatforms",
    "ImageReference",
    "InvalidImageReference",
    "Platform",
    "RegistryAuthFailed",
    "RegistryError",
    "RegistryProtocolError",
    "RegistryUnreachable",
    "image_platforms",
    "platforms_via_docker",
]


def __getattr__(name: str):
    if name == "image_platforms":
        from armada_flyte.images.registry import image_platforms

        return image_platforms
    if name == "platforms_via_docker":
        from armada_flyte.images.docker_platforms import platforms_via_docker

        return platforms_via_docker
    raise AttributeError(name)
