"""Where a registry may send the connector (registry/destinations.py): a task author names the image, so the
registry is anyone's, and the connector must not be sent into the cluster's private network."""

from __future__ import annotations

import json

import pytest

from armada_flyte.errors import RegistryProtocolError
from armada_flyte.registry.client import RegistryClient
from armada_flyte.registry.destinations import destination_problem

from support.hostile_registry import Answer, hostile_registry

ADDRESSES = {"registry.example.com": ["93.184.216.34"], "cdn.example.net": ["151.101.1.1"], "intranet": ["10.0.0.7"]}


def resolver(host: str) -> list[str]:
    return ADDRESSES.get(host, [])


@pytest.mark.pure
@pytest.mark.parametrize(
    "registry, destination, refused",
    [
        ("https://registry.example.com/v2/app/", "https://registry.example.com/v2/app/blobs/x", None),
        ("https://registry.example.com/v2/app/", "https://registry.example.com:8443/token", None),
        ("https://registry.example.com/v2/app/", "https://cdn.example.net/blob?sig=1", None),
        ("https://registry.example.com/v2/app/", "http://cdn.example.net/blob", "plain HTTP on another host"),
        ("https://registry.example.com/v2/app/", "https://169.254.169.254/latest/meta-data/", "private or local"),
        ("https://registry.example.com/v2/app/", "https://intranet/token", "private or local"),
        ("https://registry.example.com/v2/app/", "https://[::1]:8080/x", "private or local"),
        ("https://registry.example.com/v2/app/", "https://unresolvable.invalid/x", "private or local"),
        ("https://registry.example.com/v2/app/", "ftp://cdn.example.net/x", "not an http(s) URL"),
        ("https://intranet/v2/app/", "https://10.0.0.8/token", None),  # a company registry, its token service beside it
        ("http://127.0.0.1:5000/v2/app/", "http://127.0.0.1:5001/token", None),  # a local registry, plain on purpose
        ("http://127.0.0.1:5000/v2/app/", "http://10.0.0.8/token", "plain HTTP on another host"),
    ],
)
def test_which_destinations_a_registry_may_send_us_to(registry, destination, refused):
    problem = destination_problem(registry, destination, resolver)
    assert (problem is None) if refused is None else (refused in problem), problem


@pytest.fixture(scope="module")
def server():
    with hostile_registry() as running:
        yield running


@pytest.fixture
def registry(server):
    server.answers.clear()
    return server


def lookup(registry):
    with RegistryClient(timeout=5, use_docker_config=False) as client:
        return client.platforms(f"{registry.host}/app:1")


def test_a_redirect_to_another_host_over_plain_http_is_refused_before_it_is_followed(registry):
    registry.answers["app/manifests/1"] = Answer(302, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    with pytest.raises(RegistryProtocolError, match="redirect .* is refused: http://169.254.169.254 is plain HTTP"):
        lookup(registry)


def test_a_token_realm_on_another_host_over_plain_http_is_refused_before_it_is_asked(registry):
    challenge = 'Bearer realm="http://169.254.169.254/token",service="registry"'
    registry.answers["app/manifests/1"] = Answer(401, headers={"WWW-Authenticate": challenge})
    with pytest.raises(RegistryProtocolError, match="token service is refused"):
        lookup(registry)


def test_a_redirect_on_the_registrys_own_host_is_followed(registry):
    index = {
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"platform": {"os": "linux", "architecture": "arm64"}}],
    }
    registry.answers["app/manifests/1"] = Answer(307, headers={"Location": "/v2/app/manifests/moved"})
    registry.answers["app/manifests/moved"] = Answer(
        headers={"Content-Type": "application/vnd.oci.image.index.v1+json"}, body=json.dumps(index).encode()
    )
    assert [p.architecture for p in lookup(registry).platforms] == ["arm64"]


def test_a_redirect_loop_ends_with_a_protocol_error(registry):
    registry.answers["app/manifests/1"] = Answer(302, headers={"Location": "/v2/app/manifests/1"})
    with pytest.raises(RegistryProtocolError, match="more than 5 redirects"):
        lookup(registry)
