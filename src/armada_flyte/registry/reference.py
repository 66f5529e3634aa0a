"""Image references (`[host[:port]/]repository[:tag][@digest]`) parsed the way Docker reads them.

Pure text rules, no I/O: which part is the registry, Docker Hub's defaults (`docker.io`,
`library/`, `latest`), and where the registry's API actually lives.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from armada_flyte import addresses
from armada_flyte.errors import InvalidImageReference

DOCKER_HUB = "docker.io"
"""How Docker Hub is named in references and credentials."""
DOCKER_HUB_API = "registry-1.docker.io"
"""Where Docker Hub's registry API answers."""
MAX_REFERENCE = 1024
"""Docker caps a repository name at 255 characters; with registry, tag and digest this is plenty."""

_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?"
)


@dataclasses.dataclass(frozen=True)
class ImageReference:
    """One image in one registry, named by tag or by digest."""

    registry: str
    """Host[:port] as written (Docker Hub normalised to `docker.io`)."""
    repository: str
    tag: Optional[str] = None
    digest: Optional[str] = None

    @classmethod
    def parse(cls, text: str) -> ImageReference:
        """Split a reference into its parts, applying Docker's defaults, or fail saying what is wrong."""
        original = text
        if not isinstance(text, str):
            raise InvalidImageReference(str(type(text).__name__), "an image reference is text")
        if len(text) > MAX_REFERENCE:
            raise InvalidImageReference(text, f"it is longer than {MAX_REFERENCE} characters")
        text = text.strip()
        if not text:
            raise InvalidImageReference(original, "it is empty")
        if "://" in text:
            raise InvalidImageReference(original, "leave out the scheme (http:// or https://)")

        digest: Optional[str] = None
        if "@" in text:
            text, digest = text.split("@", 1)
            if not DIGEST.fullmatch(digest):
                raise InvalidImageReference(original, f"{digest!r} is not a digest like sha256:<64 hex digits>")

        registry, _, remainder = text.partition("/")
        if not remainder or not _looks_like_registry(registry):
            registry, remainder = DOCKER_HUB, text
        elif not _HOST.fullmatch(registry):
            raise InvalidImageReference(original, f"{registry!r} is not a host[:port]")
        if registry in ("index.docker.io", DOCKER_HUB_API):
            registry = DOCKER_HUB

        tag: Optional[str] = None
        last_slash = remainder.rfind("/")
        colon = remainder.rfind(":")
        if colon > last_slash:
            remainder, tag = remainder[:colon], remainder[colon + 1 :]
            if not _TAG.fullmatch(tag):
                raise InvalidImageReference(original, f"{tag!r} is not a valid tag")

        components = remainder.split("/")
        for component in components:
            if not _PATH_COMPONENT.fullmatch(component):
                raise InvalidImageReference(
                    original,
                    f"repository part {component!r} must be lower-case letters and digits, "
                    f"separated by '.', '_', '__' or '-'",
                )
        if registry == DOCKER_HUB and len(components) == 1:
            remainder = f"library/{remainder}"
        if tag is None and digest is None:
            tag = "latest"
        return cls(registry=registry, repository=remainder, tag=tag, digest=digest)

    @property
    def api_host(self) -> str:
        """Host[:port] whose /v2/ API serves this image."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def manifest_reference(self) -> str:
        """What goes after /manifests/: the digest when there is one (it pins the content), else the tag."""
        return self.digest or self.tag or "latest"

    def is_loopback(self) -> bool:
        """True for registries on this machine, which are spoken to over plain HTTP like Docker does."""
        return addresses.is_loopback(self.registry)

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag is not None:
            text += f":{self.tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text


def _looks_like_registry(first_component: str) -> bool:
    """Docker's rule: the first path part is a registry if it has a dot or a port, is localhost, or has capitals."""
    return (
        "." in first_component
        or ":" in first_component
        or first_component == "localhost"
        or first_component != first_component.lower()
    )
