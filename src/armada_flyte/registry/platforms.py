"""What an image was built for: the answer both the registry and the Docker daemon paths give.

Kept apart from the I/O so the submission check, the CLI and the doctor compare platforms the
same way: by OS and architecture, ignoring variants such as arm64's `v8`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Optional

from armada_flyte.architecture import Architecture

INDEX_MEDIA_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
"""A list of per-platform manifests."""
MANIFEST_MEDIA_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
"""One image for one platform; the platform is in its config blob."""

_ATTESTATION_ANNOTATION = "vnd.docker.reference.type"


@dataclasses.dataclass(frozen=True, order=True)
class Platform:
    """An OS/architecture pair with an optional variant, as OCI image indexes write them."""

    os: str
    architecture: str
    variant: Optional[str] = None

    @classmethod
    def from_oci(cls, data: Mapping[str, Any]) -> Platform:
        """Read the `platform` object of an index entry, or an image config's os/architecture."""

        def text(key: str) -> str:
            value = data.get(key)
            return value[:64] if isinstance(value, str) else ""  # anything else is not a platform field

        return cls(os=text("os"), architecture=text("architecture"), variant=text("variant") or None)

    @classmethod
    def parse(cls, text: str) -> Platform:
        """Read `os/arch[/variant]`, e.g. `linux/arm64/v8`."""
        parts = text.strip().split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise ValueError(f"{text!r} is not a platform like linux/amd64 or linux/arm64/v8")
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else None)

    @property
    def is_unknown(self) -> bool:
        """Attestation (SBOM, provenance) entries are listed as unknown/unknown: they are not images."""
        return self.os in ("", "unknown") or self.architecture in ("", "unknown")

    def runs(self, architecture: Architecture) -> bool:
        """Can a Linux node of this architecture run this platform's image?"""
        return self.os == "linux" and self.architecture == architecture.value

    def __str__(self) -> str:
        return f"{self.os}/{self.architecture}" + (f"/{self.variant}" if self.variant else "")


@dataclasses.dataclass(frozen=True)
class ImagePlatforms:
    """The platforms one image reference supports, with where the answer came from."""

    reference: str
    digest: str
    """Digest of the manifest or index the reference resolved to."""
    media_type: str
    platforms: tuple[Platform, ...]

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_MEDIA_TYPES

    def supports(self, architecture: Architecture) -> bool:
        """True when some platform of the image runs on Linux nodes of `architecture`."""
        return any(platform.runs(architecture) for platform in self.platforms)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "reference": self.reference,
            "digest": self.digest,
            "media_type": self.media_type,
            "platforms": [str(p) for p in self.platforms],
        }


def index_platforms(entries: Iterable[Mapping[str, Any]]) -> tuple[Platform, ...]:
    """Platforms of an index's `manifests` entries, skipping attestations and duplicates, in a stable order."""
    found: set[Platform] = set()
    for entry in entries:
        annotations = entry.get("annotations")
        if isinstance(annotations, Mapping) and annotations.get(_ATTESTATION_ANNOTATION) == "attestation-manifest":
            continue
        platform_data = entry.get("platform")
        platform = Platform.from_oci(platform_data if isinstance(platform_data, Mapping) else {})
        if not platform.is_unknown:
            found.add(platform)
    return tuple(sorted(found))
