"""Reading an image's platforms from a real registry (docker-registry on 127.0.0.1)."""

from __future__ import annotations

import pytest

from armada_flyte.architecture import Architecture
from armada_flyte.errors import ImageNotFound, RegistryProtocolError, RegistryUnreachable
from armada_flyte.registry.client import RegistryClient, image_platforms
from armada_flyte.registry.platforms import Platform

from support.fake_http import LocalServer, QuietHandler, serving

pytestmark = [
    pytest.mark.registry,
    pytest.mark.usefixtures("docker_config"),
]


def names(result) -> list[str]:
    return [str(platform) for platform in result.platforms]


def test_an_index_lists_its_platforms_without_the_attestation_entry(images):
    result = image_platforms(images.multi)
    assert names(result) == ["linux/amd64", "linux/arm64/v8"]
    assert result.is_index
    assert result.media_type == "application/vnd.oci.image.index.v1+json"


def test_an_index_supports_both_architectures(images):
    result = image_platforms(images.multi)
    assert result.supports(Architecture.amd64)
    assert result.supports(Architecture.arm64)


def test_a_single_oci_manifest_names_its_platform_in_its_config_blob(images):
    result = image_platforms(images.amd64_only)
    assert names(result) == ["linux/amd64"]
    assert not result.is_index
    assert not result.supports(Architecture.arm64)


def test_a_single_docker_v2_manifest_is_read_the_same_way(images):
    result = image_platforms(images.arm64_only)
    assert names(result) == ["linux/arm64/v8"]
    assert result.media_type == "application/vnd.docker.distribution.manifest.v2+json"
    assert result.supports(Architecture.arm64)
    assert not result.supports(Architecture.amd64)


def test_a_docker_manifest_list_lists_its_platforms(images):
    result = image_platforms(images.docker_list)
    assert names(result) == ["linux/amd64", "linux/arm/v7"]
    assert result.media_type == "application/vnd.docker.distribution.manifest.list.v2+json"
    assert not result.supports(Architecture.arm64), "arm/v7 is not arm64"


def test_a_digest_reference_reads_that_exact_index(images):
    result = image_platforms(images.multi_digest)
    assert names(result) == ["linux/amd64", "linux/arm64/v8"]
    assert result.digest == images.multi_digest.split("@", 1)[1]


def test_a_tag_resolves_to_the_digest_of_what_it_points_at(images):
    assert image_platforms(images.multi).digest == images.multi_digest.split("@", 1)[1]


def test_a_digest_reference_to_a_single_manifest(images):
    assert names(image_platforms(images.amd64_digest)) == ["linux/amd64"]


def test_a_missing_tag_is_image_not_found_saying_what_to_do(images):
    with pytest.raises(ImageNotFound) as caught:
        image_platforms(images.missing_tag)
    message = str(caught.value)
    assert images.missing_tag in message
    assert "MANIFEST_UNKNOWN" in message
    assert "push the image" in message


def test_a_missing_repository_is_image_not_found(images):
    with pytest.raises(ImageNotFound, match="no-such-repository"):
        image_platforms(images.missing_repository)


def test_a_missing_digest_is_image_not_found(images):
    reference = f"{images.host}/multi@sha256:{'0' * 64}"
    with pytest.raises(ImageNotFound):
        image_platforms(reference)


def test_an_unreachable_registry_says_what_to_check(unreachable_host):
    with pytest.raises(RegistryUnreachable) as caught:
        image_platforms(f"{unreachable_host}/app:1")
    message = str(caught.value)
    assert unreachable_host in message
    assert "could not be reached" in message
    assert "registry_insecure_hosts" in message


@pytest.fixture
def plain_web_server():
    """An HTTP server on 127.0.0.1 that is not a registry: it answers every GET with `status` and HTML."""
    answers = {"status": 200}

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            body = b"<html>hello</html>"
            self.send_response(answers["status"])
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(LocalServer(Handler)) as server:
        yield f"127.0.0.1:{server.port}", answers


def test_a_web_server_that_is_not_a_registry_is_a_protocol_error(plain_web_server):
    host, _ = plain_web_server
    with pytest.raises(RegistryProtocolError, match="not JSON"):
        image_platforms(f"{host}/app:1")


def test_a_registry_answering_server_errors_counts_as_unreachable(plain_web_server):
    host, answers = plain_web_server
    answers["status"] = 503
    with pytest.raises(RegistryUnreachable, match="HTTP 503"):
        image_platforms(f"{host}/app:1")


def test_one_client_reads_many_images(images):
    with RegistryClient() as client:
        found = {ref: names(client.platforms(ref)) for ref in (images.multi, images.amd64_only, images.arm64_only)}
    assert found == {
        images.multi: ["linux/amd64", "linux/arm64/v8"],
        images.amd64_only: ["linux/amd64"],
        images.arm64_only: ["linux/arm64/v8"],
    }


@pytest.mark.pure
def test_platforms_compare_by_os_and_architecture_not_variant():
    assert Platform.parse("linux/arm64/v8").runs(Architecture.arm64)
    assert not Platform.parse("windows/amd64").runs(Architecture.amd64)
    assert Platform.parse("unknown/unknown").is_unknown
