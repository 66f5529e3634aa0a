"""Registries that want credentials: basic auth (htpasswd) and bearer tokens (the token dance)."""

from __future__ import annotations

import base64
import json
import os
import stat

import httpx
import pytest

from armada_flyte.errors import RegistryAuthFailed
from armada_flyte.registry.client import RegistryClient, image_platforms, parse_challenge
from armada_flyte.registry.credentials import RegistryCredentials, credentials_from_docker_config

from support.registry_process import PASSWORD, USER
from support.token_service import TokenSigner

pytestmark = [
    pytest.mark.registry,
    pytest.mark.usefixtures("docker_config"),
]

RIGHT = RegistryCredentials(USER, PASSWORD)
WRONG = RegistryCredentials(USER, "not-the-password")


def names(result) -> list[str]:
    return [str(platform) for platform in result.platforms]


def write_docker_config(folder, config: dict) -> None:
    (folder / "config.json").write_text(json.dumps(config))


# --- basic auth -------------------------------------------------------------------------


def test_basic_auth_registry_with_explicit_credentials(basic_registry):
    result = image_platforms(basic_registry.multi, credentials={basic_registry.host: RIGHT})
    assert names(result) == ["linux/amd64", "linux/arm64/v8"]


def test_basic_auth_single_manifest_reads_its_config_blob_with_the_same_credentials(basic_registry):
    result = image_platforms(basic_registry.amd64_only, credentials={basic_registry.host: RIGHT})
    assert names(result) == ["linux/amd64"]


def test_basic_auth_without_credentials_says_to_log_in(basic_registry):
    with pytest.raises(RegistryAuthFailed) as caught:
        image_platforms(basic_registry.multi)
    message = str(caught.value)
    assert "none were found" in message
    assert f"docker login {basic_registry.host}" in message


def test_basic_auth_with_a_wrong_password_says_the_credentials_were_refused(basic_registry):
    with pytest.raises(RegistryAuthFailed) as caught:
        image_platforms(basic_registry.multi, credentials={basic_registry.host: WRONG})
    message = str(caught.value)
    assert f"credentials for {USER!r} were refused" in message
    assert PASSWORD not in message and "not-the-password" not in message


def test_basic_auth_credentials_from_the_docker_config_auths(basic_registry, docker_config):
    encoded = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    write_docker_config(docker_config, {"auths": {basic_registry.host: {"auth": encoded}}})
    assert names(image_platforms(basic_registry.multi)) == ["linux/amd64", "linux/arm64/v8"]


def test_docker_config_keys_written_as_urls_match_the_host(basic_registry, docker_config):
    encoded = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    write_docker_config(docker_config, {"auths": {f"https://{basic_registry.host}/v1/": {"auth": encoded}}})
    assert credentials_from_docker_config(basic_registry.host) == RIGHT


def test_docker_config_credential_helper_is_asked(basic_registry, docker_config, tmp_path, monkeypatch):
    helper_folder = tmp_path / "bin"
    helper_folder.mkdir()
    helper = helper_folder / "docker-credential-armadatest"
    answer = json.dumps({"ServerURL": basic_registry.host, "Username": USER, "Secret": PASSWORD})
    helper.write_text(
        f'#!/bin/sh\nread server\n[ "$1" = get ] && [ "$server" = "{basic_registry.host}" ] && echo \'{answer}\'\n'
    )
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{helper_folder}{os.pathsep}{os.environ['PATH']}")
    write_docker_config(docker_config, {"credHelpers": {basic_registry.host: "armadatest"}})
    assert names(image_platforms(basic_registry.multi)) == ["linux/amd64", "linux/arm64/v8"]


def test_explicit_credentials_win_over_the_docker_config(basic_registry, docker_config):
    encoded = base64.b64encode(f"{USER}:wrong".encode()).decode()
    write_docker_config(docker_config, {"auths": {basic_registry.host: {"auth": encoded}}})
    result = image_platforms(basic_registry.multi, credentials={basic_registry.host: RIGHT})
    assert names(result) == ["linux/amd64", "linux/arm64/v8"]


def test_a_broken_docker_config_means_anonymous_access(basic_registry, docker_config):
    (docker_config / "config.json").write_text("{not json")
    assert credentials_from_docker_config(basic_registry.host) is None
    with pytest.raises(RegistryAuthFailed, match="none were found"):
        image_platforms(basic_registry.multi)


@pytest.mark.pure
def test_credentials_never_show_their_password():
    assert PASSWORD not in repr(RIGHT)


# --- bearer tokens ----------------------------------------------------------------------


def test_token_registry_does_the_token_dance_with_credentials(token_registry):
    before = len(token_registry.service.requests)
    result = image_platforms(token_registry.multi, credentials={token_registry.host: RIGHT})
    assert names(result) == ["linux/amd64", "linux/arm64/v8"]
    asked = token_registry.service.requests[before:]
    assert asked, "the token service was never asked"
    assert asked[0]["query"]["scope"] == ["repository:multi:pull"]
    assert asked[0]["user"] == USER


def test_token_registry_single_manifest_reuses_the_token_for_the_config_blob(token_registry):
    before = len(token_registry.service.requests)
    result = image_platforms(token_registry.amd64_only, credentials={token_registry.host: RIGHT})
    assert names(result) == ["linux/amd64"]
    assert len(token_registry.service.requests) - before == 1


def test_token_is_reused_across_lookups_of_one_repository(token_registry):
    with RegistryClient(credentials={token_registry.host: RIGHT}) as client:
        before = len(token_registry.service.requests)
        client.platforms(token_registry.multi)
        client.platforms(token_registry.multi)
        assert len(token_registry.service.requests) - before == 1


def test_token_registry_refuses_wrong_credentials_with_a_clear_message(token_registry):
    with pytest.raises(RegistryAuthFailed) as caught:
        image_platforms(token_registry.multi, credentials={token_registry.host: WRONG})
    message = str(caught.value)
    assert "token service" in message
    assert f"credentials for {USER!r} were refused" in message


def test_token_registry_refuses_anonymous_access(token_registry):
    with pytest.raises(RegistryAuthFailed, match="refused anonymous access"):
        image_platforms(token_registry.multi)


def test_the_token_registry_checks_token_signatures(token_registry):
    """Guards the test setup: the registry really verifies tokens, so passing tests mean a real dance."""
    forged = TokenSigner().token(USER, ["repository:multi:pull"])
    answer = httpx.get(
        f"http://{token_registry.host}/v2/multi/manifests/1",
        headers={"Authorization": f"Bearer {forged}"},
    )
    assert answer.status_code == 401


@pytest.mark.pure
def test_challenges_are_parsed_with_quoted_commas():
    scheme, params = parse_challenge(
        'Bearer realm="https://auth.example.com/token",service="registry.example.com",'
        'scope="repository:team/app:pull,push"'
    )
    assert scheme == "bearer"
    assert params == {
        "realm": "https://auth.example.com/token",
        "service": "registry.example.com",
        "scope": "repository:team/app:pull,push",
    }
