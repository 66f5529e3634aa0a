"""Optional authentication and TLS, as Armada's server does them (internal/common/auth/multi.go, basic.go)."""

from __future__ import annotations

import base64
import pathlib

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.errors import InvalidConfig

from support.pods import item, pod, submit_one
from support.tls_files import self_signed
from support.waiting import wait_for_state

pytestmark = pytest.mark.embedded_only

AUTH = ("basic:ann:pw-1", "bearer:tok-1")


class Header(grpc.AuthMetadataPlugin):
    def __init__(self, value: str):
        self.value = value

    def __call__(self, context, callback):
        callback((("authorization", self.value),), None)


def basic(user: str, password: str) -> str:
    return "basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory):
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def secured(tls) -> EmbeddedArmada:
    with EmbeddedArmada(EmbeddedConfig(auth=AUTH, tls_cert=tls.cert, tls_key=tls.key)) as armada:
        yield armada


def channel_credentials(ca: pathlib.Path, header: str | None) -> grpc.ChannelCredentials:
    credentials = grpc.ssl_channel_credentials(ca.read_bytes())
    if header is not None:
        credentials = grpc.composite_channel_credentials(credentials, grpc.metadata_call_credentials(Header(header)))
    return credentials


def client_for(armada: EmbeddedArmada, ca: pathlib.Path, header: str | None) -> ArmadaClient:
    return ArmadaClient(grpc.secure_channel(armada.url, channel_credentials(ca, header)))


@pytest.mark.parametrize(
    "header", [basic("ann", "pw-1"), "Bearer tok-1", "bearer tok-1", "BASIC " + basic("ann", "pw-1")[6:]]
)
def test_known_credentials_over_tls_are_served(secured, tls, header):
    client = client_for(secured, tls.cert, header)
    job_id = submit_one(client, "flyte", "auth", item(pod(["true"])))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=30)


@pytest.mark.parametrize("header", [None, basic("ann", "wrong"), basic("bob", "pw-1"), "Bearer nope", "token tok-1"])
def test_anything_else_is_unauthenticated(secured, tls, header):
    client = client_for(secured, tls.cert, header)
    with pytest.raises(grpc.RpcError) as refused:
        client.get_queue("flyte")
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "could not be authenticated" in refused.value.details()


def test_the_authenticated_user_owns_the_job(secured, tls):
    client = client_for(secured, tls.cert, basic("ann", "pw-1"))
    job_id = submit_one(client, "flyte", "owner", item(pod(["true"])))
    assert secured.plane.queries.find_job(job_id).owner == "ann"


def test_plaintext_clients_cannot_talk_to_a_tls_server(secured):
    client = ArmadaClient(grpc.insecure_channel(secured.url))
    with pytest.raises(grpc.RpcError) as refused:
        client.get_queue("flyte")
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "failed to connect to all addresses" in refused.value.details()  # the handshake, not the server


@pytest.mark.pure
def test_a_malformed_credential_names_the_fix_and_never_echoes_the_secret():
    with pytest.raises(InvalidConfig) as bad:
        EmbeddedArmada(EmbeddedConfig(auth=("basic:only-user-no-password-SECRET",)))
    assert "basic:USER:PASSWORD" in str(bad.value) and "SECRET" not in str(bad.value)


def test_a_certificate_without_its_key_is_refused(tls):
    with pytest.raises(InvalidConfig, match="tls_key"):
        EmbeddedArmada(EmbeddedConfig(tls_cert=tls.cert))


def _list_job_sets(armada: EmbeddedArmada, ca: pathlib.Path, header: str | None):
    from armada_flyte.job_set_listing import PATH, decode_response, encode_request

    with grpc.secure_channel(armada.url, channel_credentials(ca, header)) as channel:
        listing = channel.unary_unary(
            PATH, request_serializer=lambda _: encode_request(), response_deserializer=decode_response
        )
        return listing(None, timeout=30)


def test_the_job_set_listing_requires_credentials_as_every_call_does(secured, tls):
    with pytest.raises(grpc.RpcError) as refused:
        _list_job_sets(secured, tls.cert, None)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    client = client_for(secured, tls.cert, basic("ann", "pw-1"))
    submit_one(client, "flyte", "listed-with-auth", item(pod(["true"])))
    listed = _list_job_sets(secured, tls.cert, basic("ann", "pw-1"))
    assert ("flyte", "listed-with-auth") in [(s.queue, s.job_set) for s in listed.job_sets]
