"""The connector's TLS and credentials against the real API: the embedded server with TLS and Armada-style
auth (no test double), over gRPC on 127.0.0.1."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

import armada_flyte  # noqa: F401
from armada_flyte.connector.armada.api import ArmadaApi, ArmadaAuthError, ArmadaUnavailable
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

from support.pods import item, pod, submit_one
from support.tls_files import self_signed
from support.waiting import wait_for_state


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory):
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def armada(tls):
    with EmbeddedArmada(
        EmbeddedConfig(auth=("basic:ann:pw-1", "bearer:tok-1"), tls_cert=tls.cert, tls_key=tls.key)
    ) as server:
        yield server


@pytest.fixture(scope="module")
def finished_job(armada, tls) -> str:
    """A job that ran to success, submitted with armada_client over TLS with basic auth."""

    class Basic(grpc.AuthMetadataPlugin):
        def __call__(self, context, callback):
            callback((("authorization", "basic YW5uOnB3LTE="),), None)  # ann:pw-1

    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(tls.cert.read_bytes()), grpc.metadata_call_credentials(Basic())
    )
    with grpc.secure_channel(armada.url, credentials) as channel:
        client = ArmadaClient(channel)
        job_id = submit_one(client, "flyte", "tls-auth", item(pod(["true"])))
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=30)
    return job_id


def status(armada: EmbeddedArmada, job_id: str, **settings) -> dict[str, int]:
    config = resolve_settings(armada_url=armada.url, grpc_retries=0, **settings)
    return asyncio.run(ArmadaApi(config).status([job_id]))


@pytest.mark.parametrize(
    "credentials", [{"auth_token": "tok-1"}, {"auth_username": "ann", "auth_password": "pw-1"}], ids=["bearer", "basic"]
)
def test_the_connector_reads_jobs_over_tls_with_its_credentials(armada, tls, finished_job, credentials):
    answer = status(armada, finished_job, armada_tls=True, armada_ca_cert=tls.cert, **credentials)
    assert answer == {finished_job: submit_pb2.SUCCEEDED}


@pytest.mark.parametrize(
    "credentials", [{}, {"auth_token": "wrong"}, {"auth_username": "ann", "auth_password": "nope"}]
)
def test_missing_or_wrong_credentials_are_an_auth_error_that_names_the_setting(armada, tls, finished_job, credentials):
    with pytest.raises(ArmadaAuthError, match="ARMADA_FLYTE_AUTH"):
        status(armada, finished_job, armada_tls=True, armada_ca_cert=tls.cert, **credentials)


def test_the_password_can_come_from_a_file(armada, tls, finished_job, tmp_path):
    password_file = tmp_path / "password"
    password_file.write_text("pw-1\n")  # as `echo` writes it: the line break is no part of the password
    answer = status(
        armada,
        finished_job,
        armada_tls=True,
        armada_ca_cert=tls.cert,
        auth_username="ann",
        auth_password_file=password_file,
    )
    assert answer == {finished_job: submit_pb2.SUCCEEDED}


def test_a_password_file_is_read_again_after_armada_refuses_it(armada, tls, finished_job, tmp_path):
    """A rotated Secret: the connector started with the old password, Armada refuses it, the file has the new one."""
    password_file = tmp_path / "password"
    password_file.write_text("old-password")
    config = resolve_settings(
        armada_url=armada.url,
        grpc_retries=0,
        armada_tls=True,
        armada_ca_cert=tls.cert,
        auth_username="ann",
        auth_password_file=password_file,
    )
    api = ArmadaApi(config)
    password_file.write_text("pw-1")
    assert asyncio.run(api.status([finished_job])) == {finished_job: submit_pb2.SUCCEEDED}


def test_an_unreadable_password_file_is_an_auth_error_naming_the_setting_not_the_content(armada, tls, tmp_path):
    password_file = tmp_path / "password"
    password_file.write_text("line-one\nline-two\n")
    with pytest.raises(ArmadaAuthError, match="ARMADA_FLYTE_AUTH_PASSWORD_FILE") as info:
        status(
            armada, "x", armada_tls=True, armada_ca_cert=tls.cert, auth_username="ann", auth_password_file=password_file
        )
    assert "line-one" not in str(info.value)


def test_a_server_certificate_the_connector_does_not_trust_is_refused(armada, finished_job):
    with pytest.raises(ArmadaUnavailable):
        status(armada, finished_job, armada_tls=True, auth_token="tok-1")
