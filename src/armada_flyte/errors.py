"""Errors users can catch, each saying what was asked, what exists, and how to fix it."""

from __future__ import annotations

from typing import Iterable


class ArmadaFlyteError(Exception):
    """Base of every error this package raises on purpose."""


class InvalidConfig(ArmadaFlyteError, ValueError):
    """A configuration value is wrong; the message names the field, the value and the fix."""

    def __init__(self, field: str, value: object, fix: str):
        self.field = field
        self.value = value
        self.fix = fix
        super().__init__(f"{field}={value!r} is invalid: {fix}")


class ArchitectureNotOffered(ArmadaFlyteError, ValueError):
    """The task asks for an architecture the platform's node groups don't offer."""

    def __init__(self, architecture: str, offered: Iterable[str], source: str = "task"):
        self.architecture = architecture
        self.offered = sorted(offered)
        self.source = source
        offered_text = ", ".join(self.offered) or "none"
        super().__init__(
            f"architecture {architecture!r} (set by {source}) is not offered by this platform; "
            f"offered: {offered_text}. Set ArmadaConfig(architecture=...) to one of those, "
            f"or ask your platform admin to add a {architecture} node group to the node-group file."
        )


class ArchitectureConflict(ArmadaFlyteError, ValueError):
    """Two sources pin different architectures (pod template vs task, or members of one gang)."""


class ImagePlatformMismatch(ArmadaFlyteError, ValueError):
    """The task's image was not built for the architecture the task runs on."""

    def __init__(self, task: str, image: str, platforms: Iterable[str], architecture: str):
        self.task = task
        self.image = image
        self.platforms = sorted(platforms)
        self.architecture = architecture
        platforms_text = ", ".join(self.platforms) or "none found"
        super().__init__(
            f"task {task!r} runs on {architecture} but image {image!r} is built for {platforms_text}. "
            f"Rebuild the image with linux/{architecture} among its platforms "
            f"(e.g. flyte.Image(..., platform=('linux/amd64', 'linux/arm64')) or "
            f"`docker buildx build --platform linux/amd64,linux/arm64`), "
            f"or set ArmadaConfig(architecture=...) to one the image has."
        )


class SubmissionRefused(ArmadaFlyteError):
    """Armada refused a submission (validation, permissions); retrying the same request won't help."""
