"""What a submit does when the registry can't tell the image's platforms: the admin's fallback architecture.

The node-group file's `fallback_architecture` (or the connector setting `ARMADA_FLYTE_FALLBACK_ARCHITECTURE`)
says where a task that may run on several architectures (a preference, or `any`) goes when its image's
platforms can't be read at submit (the registry is down, or refuses the connector's credentials): narrowed
to it, where it would otherwise go on unchecked, or be refused with `image_check_blocks_when_unreachable`.
A fallback only ever narrows: a task pinned to one architecture (by itself, its pod template, its declared
image platforms or the platform's default) is unaffected, and a task whose architectures don't include the
fallback keeps what it asked for, as without a fallback. Pure, so the decision is one table
(tests/connector/test_fallback_architecture.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from armada_flyte.architecture import Architecture
from armada_flyte.connector.submit.placement import ImageArchitectures

MAX_WHY = 400
"""How much of the registry's error the fallback's reason keeps (it travels in the task's metadata)."""


@dataclass(frozen=True)
class ImageQuestion:
    """What to ask the image's registry before planning: whether it has the architecture the task is pinned
    to, or (None: `any` or a preference) which of `may_run_on` it has."""

    image: str
    architecture: Optional[Architecture]
    may_run_on: tuple[Architecture, ...] = ()
    """For `any` or a preference: the architectures the task may run on before the registry answers, in order."""

    @property
    def wanted(self) -> str:
        """The architecture asked about, as messages name it (`any` for several)."""
        return self.architecture.value if self.architecture is not None else "any"


@dataclass(frozen=True)
class Fallback:
    """The admin's fallback architecture, and who set it (the node-group file, or the connector setting)."""

    architecture: Architecture
    set_by: str


@dataclass(frozen=True)
class WhenUnreadable:
    """What a submit does with an image whose platforms can't be read."""

    refuse: bool
    """Raise the registry's error (`image_check_blocks_when_unreachable`, and no fallback applies)."""
    narrowed: Optional[ImageArchitectures]
    """Plan with this in place of the registry's answer: the fallback, said in the task's message. None: plan
    as if the image's platforms were not asked for."""
    says: str
    """What the connector's log says about it."""


def when_unreadable(
    question: ImageQuestion, why: str, fallback: Optional[Fallback], blocks_when_unreachable: bool
) -> WhenUnreadable:
    """The fallback when it applies (the task may run on several architectures, the fallback among them),
    taking precedence over `blocks_when_unreachable`; else today's answer: refused when it blocks, else go on
    unchecked. `why`: why the platforms can't be read (the registry's error)."""
    why = why if len(why) <= MAX_WHY else why[: MAX_WHY - 3] + "..."
    if question.architecture is not None:
        return _unchecked(blocks_when_unreachable, f"submitting anyway without checking {question.wanted}: {why}")
    names = ", ".join(a.value for a in question.may_run_on)
    if fallback is None:
        where = f"any of {names}" if names else "any offered architecture"
        return _unchecked(blocks_when_unreachable, f"it may run on {where}, unchecked: {why}")
    if fallback.architecture not in question.may_run_on:
        return _unchecked(
            blocks_when_unreachable,
            f"the admin's fallback architecture {fallback.architecture.value} ({fallback.set_by}) is not among "
            f"the architectures the task may run on ({names}), so it does not apply; it may run on any of them, "
            f"unchecked: {why}",
        )
    reason = f"the platforms of image {question.image} could not be read at submit ({why})"
    narrowed = ImageArchitectures(
        question.image,
        (fallback.architecture,),
        f"the admin's fallback architecture ({fallback.set_by})",
        fallback=reason,
    )
    says = (
        f"narrowed to {fallback.architecture.value} of {names}, the admin's fallback architecture "
        f"({fallback.set_by}): {why}"
    )
    return WhenUnreadable(False, narrowed, says)


def _unchecked(blocks_when_unreachable: bool, says: str) -> WhenUnreadable:
    return WhenUnreadable(blocks_when_unreachable, None, says)
