"""The CPU architectures a task can ask for, and the spellings users type for them."""

from __future__ import annotations

import enum
import platform
from typing import Iterable, Literal, Tuple, Union

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

Preference = Tuple[Architecture, ...]
"""An ordered preference of two or more architectures: the first while it has room, then the next."""

ArchitectureRequest = Union[Architecture, Literal["any"], Preference]
"""What a task asks for: one architecture, `ANY`, or a `Preference`."""


def parse_request(value: object, field: str = "architecture") -> ArchitectureRequest | None:
    """Like `parse_optional`, also accepting `any` (any case), and an ordered preference: a list, or the
    comma-separated string an environment variable carries (`arm64,amd64`). A list of one is that architecture."""
    if isinstance(value, str) and value.strip().lower() == ANY:
        return ANY
    if isinstance(value, str) and "," in value:
        value = [part for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)):
        return _parse_preference(value, field)
    try:
        return parse_optional(value, field)
    except InvalidConfig as exc:
        raise InvalidConfig(
            field,
            value,
            exc.fix + f", or {ANY!r} to run wherever the image and the platform both have room, or an ordered list "
            "such as ['arm64', 'amd64'] to prefer the first",
        ) from None


def _parse_preference(values: list | tuple, field: str) -> Architecture | Preference:
    """An ordered list of distinct architectures; one alone is that architecture."""
    if not values:
        raise InvalidConfig(field, values, "list at least one architecture, e.g. ['arm64', 'amd64']")
    parsed = []
    for value in values:
        if isinstance(value, str) and value.strip().lower() == ANY:
            raise InvalidConfig(field, values, f"{ANY!r} stands alone; a preference lists architectures in order")
        parsed.append(Architecture.parse(value, field))
    if len(set(parsed)) != len(parsed):
        raise InvalidConfig(field, values, "name each architecture once, in the order you prefer them")
    return parsed[0] if len(parsed) == 1 else tuple(parsed)


def is_preference(request: object) -> bool:
    """The request is an ordered preference of two or more architectures."""
    return isinstance(request, tuple)


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
