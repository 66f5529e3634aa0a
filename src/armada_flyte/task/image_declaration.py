"""The serialisation-time image check: a `flyte.Image` Flyte builds says which platforms it has.

Task side, no I/O: a prebuilt reference is checked later, against its registry, by the
connector's opt-in submission check (`armada_flyte.connector.submit.image_check`).
"""

from __future__ import annotations

from typing import Any, Optional

from armada_flyte.architecture import Architecture, sorted_architectures
from armada_flyte.errors import ImagePlatformMismatch


def declared_platforms(image: Any) -> Optional[tuple[str, ...]]:
    """The platforms a `flyte.Image` will be built for, or None when Flyte doesn't know.

    A plain prebuilt reference (`Image.from_base("repo:tag")`, or a string) carries Flyte's
    placeholder platform, not a fact about the image; only images Flyte builds or names
    (layers, a Dockerfile, `from_debian_base`, a clone) are trusted here. The registry check at
    submission covers the rest.
    """
    try:
        from flyte import Image
    except ImportError:  # pragma: no cover - flyte is a dependency
        return None
    if not isinstance(image, Image):
        return None
    built_by_flyte = bool(
        getattr(image, "_layers", ())
        or getattr(image, "dockerfile", None) is not None
        or getattr(image, "name", None)
        or getattr(image, "_is_cloned", False)
    )
    if not built_by_flyte:
        return None
    return tuple(image.platform)


def declared_architectures(task_name: str, image: Any) -> tuple[Architecture, ...]:
    """For `architecture="any"`: the Linux architectures the image is declared for (empty: Flyte doesn't know).

    An image declared for none of amd64 and arm64 can run nowhere, so it fails serialisation.
    """
    platforms = declared_platforms(image)
    if platforms is None:
        return ()
    found = [a for a in Architecture if _declares(platforms, a.value)]
    if not found:
        raise ImagePlatformMismatch(task_name, _image_name(image), platforms, "any")
    return sorted_architectures(found)


def _declares(platforms: tuple[str, ...], architecture: str) -> bool:
    return f"linux/{architecture}" in platforms or any(p.startswith(f"linux/{architecture}/") for p in platforms)


def _image_name(image: Any) -> str:
    return str(getattr(image, "uri", None) or getattr(image, "name", None) or repr(image))


def check_image_declares(task_name: str, image: Any, architecture: str) -> None:
    """Fail serialisation when the task's image is declared without the task's architecture."""
    platforms = declared_platforms(image)
    if platforms is None:
        return
    if _declares(platforms, architecture):
        return
    raise ImagePlatformMismatch(task_name, _image_name(image), platforms, architecture)
