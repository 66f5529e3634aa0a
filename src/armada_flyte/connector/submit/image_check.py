"""The connector's opt-in check, before submitting, that the task's image runs on its architecture.

An amd64-only image on an arm64 node fails with `exec format error` after the job was queued,
scheduled and pulled; asking the registry first turns that into an immediate, clear refusal.
A registry the connector can't read (down, or private to the cluster) must not stop work by
default, so that case only warns unless the admin says otherwise: refuse
(`image_check_blocks_when_unreachable`), or narrow tasks that may run on several architectures to a
fallback architecture (`submit.fallback`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Optional

from armada_flyte.architecture import Architecture, sorted_architectures
from armada_flyte.connector.config.settings_groups import ImageChecks
from armada_flyte.connector.submit.fallback import Fallback, ImageQuestion, when_unreadable
from armada_flyte.connector.submit.placement import ImageArchitectures
from armada_flyte.errors import ImageNotFound, ImagePlatformMismatch, InvalidImageReference, RegistryError
from armada_flyte.registry.client import RegistryClient
from armada_flyte.registry.platforms import ImagePlatforms

logger = logging.getLogger(__name__)

PlatformLookup = Callable[[str], ImagePlatforms]
"""Blocking lookup of one image reference's platforms (run in a worker thread)."""

MAX_CACHED_IMAGES = 1024
"""Images whose platforms are kept (least recently used dropped first): task authors name the images, so
their number is theirs to choose, and the cache stays bounded however many they name."""


@dataclass(frozen=True)
class _Unreadable:
    """The registry can't tell an image's platforms: the error a refusal raises, and why, in words."""

    error: Exception
    why: str


class ImagePlatformCheck:
    """Looks up each image's platforms (cached for `image_platform_cache_seconds`, at most `MAX_CACHED_IMAGES`)
    and refuses mismatches.

    One instance lives as long as the connector, so the cache and the registry connections
    (and their tokens) are shared by every submission.
    """

    def __init__(
        self,
        settings: ImageChecks,
        *,
        lookup: Optional[PlatformLookup] = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._settings = settings
        self._client: Optional[RegistryClient] = None
        if lookup is None:
            self._client = RegistryClient(insecure_hosts=settings.registry_insecure_hosts)
            lookup = self._client.platforms
        self._lookup = lookup
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, ImagePlatforms]] = OrderedDict()

    async def answer(
        self, question: ImageQuestion, task_name: str, fallback: Optional[Fallback] = None
    ) -> Optional[ImageArchitectures]:
        """What the registry says before planning: for a task pinned to an architecture, `check` (None after);
        for `any` or a preference, the image's architectures, or (the registry can't tell) the admin's
        `fallback` when it applies (`fallback.when_unreadable`), else None."""
        found = await self._read(question, task_name)
        if isinstance(found, _Unreadable):
            blocks = self._settings.image_check_blocks_when_unreachable
            verdict = when_unreadable(question, found.why, fallback, blocks)
            logger.warning(
                "could not check the platforms of image %r of task %r; %s", question.image, task_name, verdict.says
            )
            if verdict.refuse:
                raise found.error
            return verdict.narrowed
        if question.architecture is not None:
            if not found.supports(question.architecture):
                platforms = [str(p) for p in found.platforms]
                raise ImagePlatformMismatch(task_name, question.image, platforms, question.architecture.value)
            return None
        architectures = sorted_architectures(a for a in Architecture if found.supports(a))
        return ImageArchitectures(question.image, architectures, "its registry, at submission")

    async def check(self, image: str, architecture: Architecture, task_name: str) -> None:
        """Return when `image` has a linux/`architecture` platform, or the registry can't tell us.

        Raises ImagePlatformMismatch when the image lacks the architecture, ImageNotFound when the
        registry has no such image, InvalidImageReference for a malformed reference, and the
        RegistryError that stopped the lookup when `image_check_blocks_when_unreachable` is set.
        """
        await self.answer(ImageQuestion(image, architecture), task_name)

    async def architectures(self, image: str, task_name: str) -> Optional[ImageArchitectures]:
        """For `architecture="any"` (no fallback): the architectures the registry lists for `image`, or None
        when it can't tell.

        Fails as `check` does: a missing image or a bad reference always, an unreachable registry (or an
        index naming no platforms) only when `image_check_blocks_when_unreachable` is set.
        """
        return await self.answer(ImageQuestion(image, None), task_name)

    async def _read(self, question: ImageQuestion, task_name: str) -> ImagePlatforms | _Unreadable:
        """The image's platforms, or why the registry can't tell (unreachable, refused, or an index naming no
        platforms) with the error a refusal raises. A missing image or a bad reference always raises."""
        try:
            platforms = await self.platforms(question.image)
        except (ImageNotFound, InvalidImageReference):
            raise
        except RegistryError as exc:
            return _Unreadable(exc, f"{type(exc).__name__}: {exc}")
        if not platforms.platforms:  # e.g. index entries without a platform: the registry can't tell
            error = ImagePlatformMismatch(task_name, question.image, [], question.wanted)
            return _Unreadable(error, "its index names no platforms")
        return platforms

    async def platforms(self, image: str) -> ImagePlatforms:
        """The image's platforms, from the cache while fresh, else from the registry (off the event loop)."""
        now = self._clock()
        cached = self._cache.get(image)
        if cached is not None and cached[0] > now:
            self._cache.move_to_end(image)
            return cached[1]
        platforms = await asyncio.to_thread(self._lookup, image)
        ttl = self._settings.image_platform_cache_seconds
        if ttl > 0:
            self._cache[image] = (self._clock() + ttl, platforms)
            self._cache.move_to_end(image)
            while len(self._cache) > MAX_CACHED_IMAGES:
                self._cache.popitem(last=False)
        else:
            self._cache.pop(image, None)
        return platforms

    def cached(self) -> int:
        """How many images' platforms are kept."""
        return len(self._cache)

    def close(self) -> None:
        """Close the registry connections when the connector shuts down."""
        if self._client is not None:
            self._client.close()
