"""The CPU architectures a task can ask for, and the spellings users type for them."""

from __future__ import annotations

import enum
import platform
from typing import Iterable, Literal, Union

from armada_flyte.errors import InvalidConfig

# Every spelling we accept, lower-cased, mapped to the Kubernetes `kubernetes.io/arch` value.
_SPELLINGS = {
    "amd64": "amd64",
    "x86_64": "amd64",
    "x86-64": "amd64",
    "x64": "amd64",
    "linux/amd64": "amd64",
    "arm64": "arm64",
    "aarch64": "arm64",
    "arm64/v8": "arm64",
    "linux/arm64": "arm64",
    "linux/arm64/v8": "arm64",
}


class Architecture(str, enum.Enum):
    """A CPU architecture, valued as Kubernetes' `kubernetes.io/arch` label spells it."""

    amd64 = "amd64"
    arm64 = "arm64"

    @property
    def platform(self) -> str:
        """The OCI platform string images use, e.g. `linux/arm64`."""
        return f"linux/{self.value}"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: object, field: str = "architecture") -> Architecture:
        """Normalise a user's spelling (`aarch64`, `linux/arm64`, `AMD64`, ...) or fail naming the field."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            normalised = _SPELLINGS.get(value.strip().lower())
            if normalised is not None:
                return cls(normalised)
        accepted = ", ".join(sorted(_SPELLINGS))
        raise InvalidConfig(
            field,
            value,
            f"use one of {', '.join(a.value for a in cls)} (accepted spellings: {accepted})",
        )


def parse_optional(value: object, field: str = "architecture") -> Architecture | None:
    """Like `Architecture.parse`, but None (and the empty string) mean 'no architecture asked for'."""
    if value is None or value == "":
        return None
    return Architecture.parse(value, field)


ANY = "any"
"""`architecture="any"`: whichever architecture both the task's image and the platform offer has room."""

ArchitectureRequest = Union[Architecture, Literal["any"]]
"""What a task asks for: one architecture, or `ANY`."""


def parse_request(value: object, field: str = "architecture") -> ArchitectureRequest | None:
    """Like `parse_optional`, also accepting `any` (any case): the task may run on several architectures."""
    if isinstance(value, str) and value.strip().lower() == ANY:
        return ANY
    try:
        return parse_optional(value, field)
    except InvalidConfig as exc:
        raise InvalidConfig(
            field, value, exc.fix + f", or {ANY!r} to run wherever the image and the platform both have room"
        ) from None


def sorted_architectures(architectures: Iterable[Architecture]) -> tuple[Architecture, ...]:
    """Architectures in one stable order (by their value), for messages, labels and affinity values."""
    return tuple(sorted(set(architectures), key=lambda a: a.value))


def host_architecture() -> Architecture | None:
    """This machine's architecture (x86_64 -> amd64, aarch64 -> arm64), or None when it is neither."""
    try:
        return Architecture.parse(platform.machine())
    except InvalidConfig:
        return None


def host_architecture_name() -> str:
    """This machine's architecture as `kubernetes.io/arch` spells it, or its raw machine name."""
    return str(host_architecture() or platform.machine().lower())
