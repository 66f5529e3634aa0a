"""Crashes that mean the image holds programs for another CPU: said as the missing image variant.

A pod whose binaries are for another architecture starts, then dies at once. The container
runtime passes on the kernel's ENOEXEC text ("exec /bin/x: exec format error"), which Armada's
executor puts into the job's failure reason with the container's last output. Python's dynamic
loader says it differently for a wheel built for another CPU ("wrong ELF class: ELFCLASS64",
"ELF file's phentsize not the expected size", "invalid ELF header"), in a0's error or in the
reason. A bare "cannot open shared object file" is not one of them: a missing library says that
too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

_WRONG_ARCHITECTURE = re.compile(
    r"exec format error"
    r"|wrong ELF class: ELFCLASS(?:32|64)"
    r"|ELF file's phentsize not the expected size"
    r"|invalid ELF header",
    re.IGNORECASE,
)

MAX_EVIDENCE = 300
"""Characters of the crash line quoted (a reason line may carry a long output tail)."""

BUILD_BOTH = "docker buildx build --platform linux/amd64,linux/arm64"


@dataclass(frozen=True)
class WrongArchitecture:
    """A crash recognised as a foreign-architecture program, with what to tell the user."""

    image: str
    architecture: str
    """Where the job ran (empty: not known)."""
    evidence: str
    """The line of the crash text that gave it away."""

    def says(self) -> str:
        image = self.image or "the task's image"
        if self.architecture:
            return f"image {image} has no linux/{self.architecture} variant"
        return f"image {image} has no variant for the architecture of the node it ran on"

    def fix(self) -> str:
        return (
            f"build the image for both platforms (`{BUILD_BOTH} ...`, or `armada-flyte image build`), "
            f"or pin the task to an architecture the image has (ArmadaConfig(architecture=...); "
            f"`armada-flyte image inspect {self.image or 'IMAGE'}` lists its platforms)"
        )

    def as_info(self) -> dict[str, Any]:
        return {"image": self.image, "architecture": self.architecture, "evidence": self.evidence}


def wrong_architecture(text: str, image: str, architecture: str) -> Optional[WrongArchitecture]:
    """The crash in `text` (Armada's reason or a0's error) if it is a foreign-architecture program, else None."""
    for line in text.splitlines():
        if _WRONG_ARCHITECTURE.search(line):
            return WrongArchitecture(image, architecture, line.strip()[:MAX_EVIDENCE])
    return None
