"""The connector's submission-time image check, against the real registry."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from armada_flyte.architecture import Architecture
from armada_flyte.connector.config.settings_groups import ImageChecks
from armada_flyte.connector.submit.image_check import ImagePlatformCheck
from armada_flyte.errors import (
    ImageNotFound,
    ImagePlatformMismatch,
    RegistryAuthFailed,
    RegistryProtocolError,
    RegistryUnreachable,
)
from armada_flyte.registry.client import image_platforms

from support.fake_http import LocalServer, QuietHandler, serving
from support.oci_upload import RegistryUploader

pytestmark = [
    pytest.mark.registry,
    pytest.mark.usefixtures("docker_config"),
]


def settings(**overrides) -> ImageChecks:
    return ImageChecks(check_image_platforms=True, **overrides)


class Clock:
    """A clock the test moves by hand, so TTLs are tested without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingLookup:
    """The real registry lookup, counting calls and noting the thread each ran on."""

    def __init__(self) -> None:
        self.calls = 0
        self.threads: list[threading.Thread] = []

    def __call__(self, image: str):
        self.calls += 1
        self.threads.append(threading.current_thread())
        return image_platforms(image)


def run(coroutine):
    return asyncio.run(coroutine)


def test_refuses_arm64_on_an_amd64_only_image(images):
    check = ImagePlatformCheck(settings())
    with pytest.raises(ImagePlatformMismatch) as caught:
        run(check.check(images.amd64_only, Architecture.arm64, "train"))
    error = caught.value
    assert (error.task, error.image, error.platforms, error.architecture) == (
        "train",
        images.amd64_only,
        ["linux/amd64"],
        "arm64",
    )
    assert "linux/arm64" in str(error) and "Rebuild the image" in str(error)


# The passing cases block on an unreachable registry, so they can only pass by a real answer.
def test_passes_amd64_on_an_amd64_only_image(images):
    run(
        ImagePlatformCheck(settings(image_check_blocks_when_unreachable=True)).check(
            images.amd64_only, Architecture.amd64, "train"
        )
    )


@pytest.mark.parametrize("architecture", list(Architecture))
def test_passes_every_architecture_on_the_index(images, architecture):
    run(
        ImagePlatformCheck(settings(image_check_blocks_when_unreachable=True)).check(
            images.multi, architecture, "train"
        )
    )


def test_refuses_amd64_on_an_arm64_only_image(images):
    with pytest.raises(ImagePlatformMismatch, match="linux/arm64/v8"):
        run(ImagePlatformCheck(settings()).check(images.arm64_only, Architecture.amd64, "train"))


def test_a_missing_image_is_refused_even_when_unreachable_registries_only_warn(images):
    with pytest.raises(ImageNotFound):
        run(ImagePlatformCheck(settings()).check(images.missing_tag, Architecture.amd64, "train"))


def test_an_unreachable_registry_warns_and_lets_the_job_through(unreachable_host, caplog):
    check = ImagePlatformCheck(settings())
    with caplog.at_level(logging.WARNING, logger="armada_flyte.connector.submit.image_check"):
        run(check.check(f"{unreachable_host}/app:1", Architecture.arm64, "train"))
    assert "could not check" in caplog.text
    assert "'train'" in caplog.text and unreachable_host in caplog.text


def test_an_unreachable_registry_blocks_when_the_admin_says_so(unreachable_host):
    check = ImagePlatformCheck(settings(image_check_blocks_when_unreachable=True))
    with pytest.raises(RegistryUnreachable):
        run(check.check(f"{unreachable_host}/app:1", Architecture.arm64, "train"))


def test_refused_credentials_count_as_could_not_check(basic_registry, caplog):
    with caplog.at_level(logging.WARNING, logger="armada_flyte.connector.submit.image_check"):
        run(ImagePlatformCheck(settings()).check(basic_registry.amd64_only, Architecture.arm64, "train"))
    assert "could not check" in caplog.text
    with pytest.raises(RegistryAuthFailed):
        blocking = ImagePlatformCheck(settings(image_check_blocks_when_unreachable=True))
        run(blocking.check(basic_registry.amd64_only, Architecture.arm64, "train"))


def test_answers_are_cached_until_the_ttl_passes(registry):
    """A tag re-pushed from amd64-only to an index is seen only once the cached answer expires."""
    image = f"{registry.host}/moving:1"
    upload = RegistryUploader(registry.url)
    clock, lookup = Clock(), CountingLookup()
    check = ImagePlatformCheck(settings(image_platform_cache_seconds=60), lookup=lookup, clock=clock)
    try:
        upload.push_image("moving", "1", "amd64")
        with pytest.raises(ImagePlatformMismatch):
            run(check.check(image, Architecture.arm64, "train"))

        upload.push_index(
            "moving", "1", [upload.push_image("moving", None, "amd64"), upload.push_image("moving", None, "arm64")]
        )
        clock.now += 59
        with pytest.raises(ImagePlatformMismatch):
            run(check.check(image, Architecture.arm64, "train"))
        assert lookup.calls == 1

        clock.now += 2
        run(check.check(image, Architecture.arm64, "train"))
        assert lookup.calls == 2
    finally:
        upload.close()


def test_a_zero_ttl_asks_the_registry_every_time(images):
    lookup = CountingLookup()
    check = ImagePlatformCheck(settings(image_platform_cache_seconds=0), lookup=lookup)
    for _ in range(3):
        run(check.check(images.multi, Architecture.amd64, "train"))
    assert lookup.calls == 3


def test_failed_lookups_are_not_cached(unreachable_host):
    lookup = CountingLookup()
    check = ImagePlatformCheck(settings(), lookup=lookup)
    for _ in range(2):
        run(check.check(f"{unreachable_host}/app:1", Architecture.amd64, "train"))
    assert lookup.calls == 2


def test_the_lookup_runs_off_the_event_loop_thread(images):
    lookup = CountingLookup()
    check = ImagePlatformCheck(settings(), lookup=lookup)

    async def check_and_note_loop_thread():
        await check.check(images.multi, Architecture.amd64, "train")
        return threading.current_thread()

    loop_thread = run(check_and_note_loop_thread())
    assert lookup.threads and lookup.threads[0] is not loop_thread


def test_the_event_loop_keeps_running_during_a_lookup(images):
    """Other coroutines progress while the registry is asked (the lookup waits on an event they set)."""
    release = threading.Event()

    def slow_lookup(image: str):
        assert release.wait(timeout=10), "the event loop was blocked"
        return image_platforms(image)

    check = ImagePlatformCheck(settings(), lookup=slow_lookup)

    async def both():
        async def releaser():
            await asyncio.sleep(0)
            release.set()

        await asyncio.gather(check.check(images.multi, Architecture.arm64, "train"), releaser())

    run(both())


def test_an_index_naming_no_platforms_warns_instead_of_refusing(registry, caplog):
    upload = RegistryUploader(registry.url)
    try:
        entry = upload.push_image("noplatform", None, "amd64")
        entry.pop("platform")  # the OCI spec makes it optional
        upload.push_index("noplatform", "1", [entry])
    finally:
        upload.close()
    image = f"{registry.host}/noplatform:1"
    with caplog.at_level(logging.WARNING, logger="armada_flyte.connector.submit.image_check"):
        run(ImagePlatformCheck(settings()).check(image, Architecture.arm64, "train"))
    assert "names no platforms" in caplog.text
    with pytest.raises(ImagePlatformMismatch):
        run(
            ImagePlatformCheck(settings(image_check_blocks_when_unreachable=True)).check(
                image, Architecture.arm64, "train"
            )
        )


def test_an_index_naming_no_platforms_narrows_a_preference_to_the_fallback_even_when_blocking(registry):
    from armada_flyte.connector.submit.fallback import Fallback, ImageQuestion

    upload = RegistryUploader(registry.url)
    try:
        entry = upload.push_image("noplatform-fb", None, "arm64")
        entry.pop("platform")
        upload.push_index("noplatform-fb", "1", [entry])
    finally:
        upload.close()
    question = ImageQuestion(f"{registry.host}/noplatform-fb:1", None, (Architecture.arm64, Architecture.amd64))
    blocking = ImagePlatformCheck(settings(image_check_blocks_when_unreachable=True))
    with pytest.raises(ImagePlatformMismatch):  # no fallback: refused, as before
        run(blocking.answer(question, "train"))
    narrowed = run(blocking.answer(question, "train", Fallback(Architecture.amd64, "the test")))
    assert narrowed is not None and narrowed.architectures == (Architecture.amd64,)
    assert narrowed.fallback.endswith("could not be read at submit (its index names no platforms)")


class _RedirectLoop(QuietHandler):
    def do_GET(self):
        self.send_response(302)
        self.send_header("Location", self.path)
        self.end_headers()


def test_a_registry_that_misbehaves_warns_and_lets_the_job_through(caplog):
    with serving(LocalServer(_RedirectLoop)) as server:
        image = f"127.0.0.1:{server.port}/app:1"
        with caplog.at_level(logging.WARNING, logger="armada_flyte.connector.submit.image_check"):
            run(ImagePlatformCheck(settings()).check(image, Architecture.amd64, "train"))
        assert "could not check" in caplog.text
        with pytest.raises(RegistryProtocolError):
            run(
                ImagePlatformCheck(settings(image_check_blocks_when_unreachable=True)).check(
                    image, Architecture.amd64, "train"
                )
            )


@pytest.mark.pure
def test_the_cache_keeps_at_most_its_size_dropping_the_least_recently_used():
    from armada_flyte.connector.submit.image_check import MAX_CACHED_IMAGES
    from armada_flyte.registry.platforms import ImagePlatforms, Platform

    asked: list[str] = []

    def lookup(image: str) -> ImagePlatforms:
        asked.append(image)
        return ImagePlatforms(
            image, "sha256:0", "application/vnd.oci.image.manifest.v1+json", (Platform("linux", "amd64"),)
        )

    check = ImagePlatformCheck(settings(image_platform_cache_seconds=3600), lookup=lookup, clock=Clock())

    async def ask(*images: str) -> None:
        for image in images:
            await check.platforms(image)

    images = [f"registry.example/team/image:{n}" for n in range(MAX_CACHED_IMAGES + 50)]
    asyncio.run(ask(images[0], *images[1:MAX_CACHED_IMAGES]))  # full
    asyncio.run(ask(images[0]))  # used again: the most recent now
    asyncio.run(ask(*images[MAX_CACHED_IMAGES:]))  # 50 more push out the 50 least recently used
    assert check.cached() == MAX_CACHED_IMAGES
    asked.clear()
    asyncio.run(ask(images[0], images[51]))
    assert asked == []  # kept: used again, and recent enough
    asyncio.run(ask(images[1]))
    assert asked == [images[1]]  # dropped: asked again
