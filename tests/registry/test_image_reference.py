"""Image references are split the way Docker splits them."""

from __future__ import annotations

import pytest

from armada_flyte.errors import InvalidImageReference
from armada_flyte.registry.reference import ImageReference

pytestmark = [pytest.mark.usefixtures("docker_config"), pytest.mark.pure]

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        ("python", "docker.io", "library/python", "latest", None),
        ("python:3.11-slim", "docker.io", "library/python", "3.11-slim", None),
        ("flyteorg/flyte:v2", "docker.io", "flyteorg/flyte", "v2", None),
        ("docker.io/python:3.12", "docker.io", "library/python", "3.12", None),
        ("index.docker.io/library/python", "docker.io", "library/python", "latest", None),
        ("ghcr.io/org/team/app:1.2", "ghcr.io", "org/team/app", "1.2", None),
        ("127.0.0.1:5000/app:1", "127.0.0.1:5000", "app", "1", None),
        ("localhost/app", "localhost", "app", "latest", None),
        ("localhost:5000/a/b", "localhost:5000", "a/b", "latest", None),
        (f"127.0.0.1:5000/app@{DIGEST}", "127.0.0.1:5000", "app", None, DIGEST),
        (f"ghcr.io/org/app:1.2@{DIGEST}", "ghcr.io", "org/app", "1.2", DIGEST),
        ("[::1]:5000/app:1", "[::1]:5000", "app", "1", None),
        ("Registry/app:1", "Registry", "app", "1", None),
    ],
)
def test_references_split_like_docker(text, registry, repository, tag, digest):
    ref = ImageReference.parse(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag, digest)


def test_a_digest_is_what_the_manifest_is_fetched_by():
    assert ImageReference.parse(f"ghcr.io/org/app:1.2@{DIGEST}").manifest_reference == DIGEST
    assert ImageReference.parse("ghcr.io/org/app:1.2").manifest_reference == "1.2"


def test_docker_hub_is_reached_at_its_api_host():
    assert ImageReference.parse("python").api_host == "registry-1.docker.io"
    assert ImageReference.parse("ghcr.io/org/app").api_host == "ghcr.io"


@pytest.mark.parametrize(
    "text", ["127.0.0.1:5000/app", "localhost:5000/app", "localhost/app", "[::1]:5000/app", "127.1.2.3/app"]
)
def test_loopback_registries_are_recognised(text):
    assert ImageReference.parse(text).is_loopback()


@pytest.mark.parametrize("text", ["ghcr.io/app", "10.0.0.1:5000/app", "python"])
def test_other_registries_are_not_loopback(text):
    assert not ImageReference.parse(text).is_loopback()


def test_written_back_in_full():
    assert str(ImageReference.parse("python:3.11")) == "docker.io/library/python:3.11"
    assert str(ImageReference.parse(f"127.0.0.1:5000/app@{DIGEST}")) == f"127.0.0.1:5000/app@{DIGEST}"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("https://ghcr.io/org/app", "scheme"),
        ("ghcr.io/Org/app", "lower-case"),
        ("ghcr.io/org/app:bad tag", "valid tag"),
        ("ghcr.io/org/app@sha256:short", "digest"),
        ("ghcr.io/org//app", "lower-case"),
    ],
)
def test_malformed_references_say_what_is_wrong(text, problem):
    with pytest.raises(InvalidImageReference, match=problem) as caught:
        ImageReference.parse(text)
    assert "[registry/]repository[:tag][@sha256:digest]" in str(caught.value)
