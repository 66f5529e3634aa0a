"""The images a cluster's nodes hold, for the process runner (as `kind load` puts images on kind's nodes).

The cluster file's optional `images` section lists image references. Each may name a folder of
programs that goes first on the pod's PATH (the image's own programs, e.g. busybox applets for
alpine) and the image's ENTRYPOINT and CMD, which Kubernetes' rules combine with the container's
`command` (replaces ENTRYPOINT) and `args` (replaces CMD). Without the section any image runs,
on the host's programs, as before. With it, a pod whose image is not listed can't be pulled: it
stays pending, then fails as Armada's executor fails a pod whose image pull failed (its pending-pod
check on the kubelet's "Failed to pull image" event, after the check's grace period).
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import List, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from armada_flyte.errors import InvalidConfig

DOCKER_HUB = "docker.io"
PULL_FAILURE_GRACE_SECONDS = 90.0
"""How long Armada's executor leaves a pod whose image pull failed before failing it: the grace period of
its pending-pod event checks for `Failed to pull image.* failed to pull and unpack image`
(`kubernetes.pendingPodChecks.events` in config/executor/config.yaml)."""


def normalise_reference(reference: str) -> str:
    """`reference` as containerd resolves it: docker.io/library/ for a bare name, `:latest` without tag or digest."""
    name, digest = (reference.split("@", 1) + [""])[:2]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and not digest:
        name += ":latest"
    first = name.split("/", 1)[0]
    if "/" not in name or not ("." in first or ":" in first or first == "localhost"):
        name = f"{DOCKER_HUB}/{name}" if "/" in name else f"{DOCKER_HUB}/library/{name}"
    return f"{name}@{digest}" if digest else name


class ImageEntry(BaseModel):
    """One image the nodes hold: its reference, its programs' folder, its ENTRYPOINT and CMD."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str = Field(min_length=1)
    path: Optional[str] = None
    """A folder of the image's programs (relative to the cluster file), first on the pod's PATH."""
    entrypoint: List[str] = []
    cmd: List[str] = []

    @field_validator("image")
    @classmethod
    def _reference(cls, image: str) -> str:
        if any(c.isspace() for c in image) or image != image.strip("/:@"):
            raise ValueError(f"{image!r} is not an image reference; write it as in a pod spec, e.g. alpine:3.20.0")
        return image


@dataclass(frozen=True)
class Image:
    """A catalogued image with its programs' folder resolved."""

    reference: str
    programs: Optional[pathlib.Path]
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]

    def argv(self, command: list[str], args: list[str]) -> list[str]:
        """What the container runs: `command` replaces ENTRYPOINT (and drops CMD), `args` replaces CMD."""
        if command:
            return [*command, *args]
        return [*self.entrypoint, *(args or self.cmd)]


class ImageCatalogue:
    """The images of the cluster file's `images` section (a cluster without the section has no catalogue)."""

    def __init__(self, images: list[Image], pull_failure_grace_seconds: float = PULL_FAILURE_GRACE_SECONDS):
        self._images = {normalise_reference(image.reference): image for image in images}
        self.pull_failure_grace_seconds = pull_failure_grace_seconds

    @classmethod
    def from_entries(
        cls, entries: list[ImageEntry], base: pathlib.Path, grace: float, origin: str = "cluster file"
    ) -> ImageCatalogue:
        """Resolve each entry's folder against `base` (the cluster file's folder); a missing folder is an error."""
        images: list[Image] = []
        seen: dict[str, int] = {}
        for index, entry in enumerate(entries):
            first = seen.setdefault(normalise_reference(entry.image), index)
            if first != index:
                raise InvalidConfig(
                    f"{origin}: images.{index}.image",
                    entry.image,
                    f"images.{first} is the same image ({normalise_reference(entry.image)}): list each image once",
                )
            programs = None
            if entry.path is not None:
                programs = (base / entry.path).resolve()
                if not programs.is_dir():
                    raise InvalidConfig(
                        f"{origin}: images.{index}.path",
                        entry.path,
                        f"{programs} is not a folder: give a folder of the image's programs "
                        "(relative to the cluster file)",
                    )
            images.append(Image(entry.image, programs, tuple(entry.entrypoint), tuple(entry.cmd)))
        return cls(images, grace)

    def __len__(self) -> int:
        return len(self._images)

    def find(self, reference: str) -> Optional[Image]:
        return self._images.get(normalise_reference(reference))

    def references(self) -> list[str]:
        return [image.reference for image in self._images.values()]

    def program_folders(self) -> list[pathlib.Path]:
        return [image.programs for image in self._images.values() if image.programs is not None]


def pull_failure_message(reference: str) -> str:
    """The kubelet's warning event for an image no node holds and no registry gave (containerd's wording)."""
    resolved = normalise_reference(reference)
    return (
        f'Failed to pull image "{reference}": failed to pull and unpack image "{resolved}": '
        f'failed to resolve reference "{resolved}": not found in the embedded cluster\'s image catalogue '
        "(the cluster file's images section)"
    )


def pull_failure_reason(reference: str) -> str:
    """The failed event's reason, as Armada's pod issue handler words an unrecoverable stuck pod
    (`createStuckPodMessage` in internal/executor/service/pod_issue_handler.go) carrying the event check's
    match (`getEventAction` in internal/executor/podchecks/event_checks.go; unnamed checks are check-<index>)."""
    return (
        "Unable to start pod - encountered an unrecoverable problem.\n"
        f'Matched check: "check-0"\n{pull_failure_message(reference)}'
    )
