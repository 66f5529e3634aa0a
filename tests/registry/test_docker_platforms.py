"""The Docker daemon path gives the same answers as the registry path (a real dockerd)."""

from __future__ import annotations

import pytest

from armada_flyte.errors import DockerDaemonUnavailable, ImageNotFound, RegistryAuthFailed
from armada_flyte.registry.client import image_platforms
from armada_flyte.registry.docker_platforms import platforms_via_docker

from support.registry_process import PASSWORD, USER

pytestmark = [
    pytest.mark.docker,
    pytest.mark.usefixtures("docker_config"),
]


@pytest.fixture
def daemon(dockerd):
    import docker

    client = docker.APIClient(base_url=dockerd, version="auto")
    yield client
    client.close()


def names(result) -> list[str]:
    return [str(platform) for platform in result.platforms]


@pytest.mark.parametrize("which", ["multi", "multi_digest", "amd64_only", "arm64_only", "docker_list"])
def test_the_daemon_agrees_with_the_registry(images, daemon, which):
    reference = getattr(images, which)
    through_daemon = platforms_via_docker(reference, client=daemon)
    from_registry = image_platforms(reference)
    assert names(through_daemon) == names(from_registry)
    assert through_daemon.digest == from_registry.digest


def test_the_daemon_skips_the_attestation_entry(images, daemon):
    assert names(platforms_via_docker(images.multi, client=daemon)) == ["linux/amd64", "linux/arm64/v8"]


def test_a_missing_tag_through_the_daemon_is_image_not_found(images, daemon):
    with pytest.raises(ImageNotFound):
        platforms_via_docker(images.missing_tag, client=daemon)


def test_basic_auth_through_the_daemon(basic_registry, daemon):
    result = platforms_via_docker(
        basic_registry.multi, client=daemon, auth_config={"username": USER, "password": PASSWORD}
    )
    assert names(result) == ["linux/amd64", "linux/arm64/v8"]


def test_basic_auth_through_the_daemon_without_credentials_is_refused(basic_registry, daemon):
    with pytest.raises(RegistryAuthFailed):
        platforms_via_docker(basic_registry.multi, client=daemon)


def test_no_daemon_says_how_to_fix_it(tmp_path):
    import docker

    with pytest.raises(DockerDaemonUnavailable, match="DOCKER_HOST"):
        client = docker.APIClient(base_url=f"unix://{tmp_path}/nothing.sock", version="1.41")
        platforms_via_docker("127.0.0.1:5000/app:1", client=client)


def test_a_single_oci_manifest_behind_basic_auth_through_the_daemon(basic_registry, daemon):
    credentials = {"username": USER, "password": PASSWORD}
    result = platforms_via_docker(basic_registry.amd64_only, client=daemon, auth_config=credentials)
    assert names(result) == ["linux/amd64"]
