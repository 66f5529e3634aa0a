"""The generic task runtime as a `flyte.Image`, so Flyte's own builder can build and push it.

The Dockerfile lives in the repository's `images/` folder; `runtime_image_files` is a symlink
to it inside the package, so the same file is found from a checkout, an editable install, and
a wheel (setuptools copies the files behind the symlink when package-data lists them).
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import flyte

RUNTIME_PLATFORMS = ("linux/amd64", "linux/arm64")
"""Every architecture a task may be placed on; the runtime image is built for all of them."""
DEFAULT_IMAGE_NAME = "armada-flyte-runtime"


def runtime_image_dir() -> pathlib.Path:
    """The folder holding the runtime image's Dockerfile and bake file."""
    return (pathlib.Path(__file__).parent / "runtime_image_files").resolve()


def runtime_dockerfile() -> pathlib.Path:
    return runtime_image_dir() / "Dockerfile"


def runtime_image(registry: str, name: str = DEFAULT_IMAGE_NAME) -> flyte.Image:
    """A `flyte.Image` of the generic task runtime for linux/amd64 and linux/arm64.

    Flyte builds it with `docker buildx build --platform linux/amd64,linux/arm64 --push`, using
    the Dockerfile's folder as the context, so armada-flyte is installed from the package index
    at this package's version.
    """
    import flyte

    return flyte.Image.from_dockerfile(runtime_dockerfile(), registry, name, platform=RUNTIME_PLATFORMS)
