"""Credentials beyond a static token: OIDC client credentials and a token command (armadactl's
`openIdClientCredentialsAuth` and `execAuth`, pkg/client/auth/{oidc,exec} in Armada's source).

Real parts: an identity provider of the tests' own on 127.0.0.1, and the embedded Armada server
behind a gRPC front that refuses calls without a token the provider vouches for; the connector
in-process and as `c0`.
"""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.service import ArmadaConnector
from armada_flyte.errors import ArmadaAuthError, InvalidConfig

from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.auth_front import auth_front
from support.c0_service import poll_until_done, running_c0
from support.oidc_provider import oidc_provider

DONE = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.ABORTED, TaskExecution.RETRYABLE_FAILED}
CLIENT_ID, CLIENT_SECRET = "armada-flyte-c0", "the-client-secret-0451"


@pytest.fixture
def provider():
    with oidc_provider(CLIENT_ID, CLIENT_SECRET, lifetime=3600) as server:
        yield server


@pytest.fixture
def front(armada, provider):
    with auth_front(armada.url, provider.valid) as (url, record):
        record.url = url
        yield record


def _oidc(provider, front, **extra):
    return {
        "armada_url": front.url,
        "node_groups_preset": "embedded",
        "oidc_token_url": provider.token_url,
        "oidc_client_id": CLIENT_ID,
        "oidc_client_secret": CLIENT_SECRET,
        "oidc_scopes": "armada.submit,armada.watch",
        **extra,
    }


def _submit_and_finish():
    async def scenario():
        connector = ArmadaConnector()
        meta = await connector.create(
            python_template("pass"), "s3://b/raw", task_execution_metadata=execution_metadata()
        )
        return await wait_for(connector, meta, DONE)

    return run(scenario())


def test_client_credentials_token_gets_a_job_through_an_authenticating_armada(provider, front):
    armada_flyte.configure(**_oidc(provider, front))
    assert _submit_and_finish().phase == TaskExecution.SUCCEEDED
    assert front.seen and front.refused == 0
    assert len(provider.issued) <= 2  # reused across calls (the connector and its status view each hold one)
    expected = {"grant_type": "client_credentials", "scope": "armada.submit armada.watch", "client_id": CLIENT_ID}
    assert provider.grants and all(grant == expected for grant in provider.grants)


def test_the_token_is_refreshed_before_it_expires(armada):
    with oidc_provider(CLIENT_ID, CLIENT_SECRET, lifetime=1.0) as provider:
        with auth_front(armada.url, provider.valid) as (url, front):
            front.url = url
            api = ArmadaApi(resolve_settings(**_oidc(provider, front)))

            async def poll_until_refreshed():
                deadline = time.monotonic() + 20
                while len(provider.issued) < 3:
                    await api.status(["unknown-job"])
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.02)
                await api.close()

            run(poll_until_refreshed())
    assert front.refused == 0  # every token Armada saw was still valid: refreshed ahead of expiry
    assert len(set(front.seen)) >= 3


def test_the_provider_url_is_discovered_and_the_secret_read_from_a_mounted_file(provider, front, tmp_path):
    secret = tmp_path / "client-secret"
    secret.write_text(CLIENT_SECRET + "\n")
    settings = _oidc(provider, front, oidc_client_secret=None, oidc_client_secret_file=secret)
    settings.pop("oidc_token_url")
    armada_flyte.configure(**settings, oidc_provider_url=provider.url)
    assert _submit_and_finish().phase == TaskExecution.SUCCEEDED


def test_a_refused_client_secret_is_a_typed_error_that_never_shows_the_secret(provider, front):
    armada_flyte.configure(**_oidc(provider, front, oidc_client_secret="wrong-secret-7731"))
    api = ArmadaApi(resolve_settings())
    with pytest.raises(ArmadaAuthError) as info:
        run(api.status(["j"]))
    message = str(info.value)
    assert "invalid_client" in message and "ARMADA_FLYTE_OIDC_CLIENT_SECRET" in message
    assert "wrong-secret-7731" not in message and CLIENT_SECRET not in message


def test_an_unreachable_token_endpoint_is_a_typed_error(front):
    armada_flyte.configure(
        armada_url=front.url, oidc_token_url="http://127.0.0.1:9/token", oidc_client_id="c", oidc_client_secret="s"
    )
    with pytest.raises(ArmadaAuthError, match="could not get an Armada token"):
        run(ArmadaApi(resolve_settings()).status(["j"]))


def _token_command(tmp_path, token: str):
    store = tmp_path / "token"
    store.write_text(token)
    script = tmp_path / "print_token.py"
    script.write_text(f"import pathlib\nprint(pathlib.Path({str(store)!r}).read_text())\n")
    return store, script


def test_an_exec_token_command_is_run_and_its_token_refetched_when_armada_refuses_it(armada, tmp_path):
    store, script = _token_command(tmp_path, "token-one")
    with auth_front(armada.url, lambda token: token == store.read_text()) as (url, front):
        api = ArmadaApi(resolve_settings(armada_url=url, auth_exec_cmd=sys.executable, auth_exec_args=[str(script)]))
        run(api.status(["j"]))
        store.write_text("token-two")  # rotated: the cached token is now refused
        run(api.status(["j"]))
    assert front.seen == ["token-one", "token-one", "token-two"] and front.refused == 1


def test_a_failing_token_command_is_a_typed_error(front, tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.stderr.write('not logged in\\n')\nsys.exit(3)\n")
    armada_flyte.configure(armada_url=front.url, auth_exec_cmd=sys.executable, auth_exec_args=str(script))
    with pytest.raises(ArmadaAuthError, match="exited 3: not logged in"):
        run(ArmadaApi(resolve_settings()).status(["j"]))


def test_c0_authenticates_with_client_credentials_from_its_environment(armada, provider, front, tmp_path):
    secret = tmp_path / "client-secret"
    secret.write_text(CLIENT_SECRET)
    env = {
        "ARMADA_URL": front.url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "ARMADA_FLYTE_OIDC_TOKEN_URL": provider.token_url,
        "ARMADA_FLYTE_OIDC_CLIENT_ID": CLIENT_ID,
        "ARMADA_FLYTE_OIDC_CLIENT_SECRET_FILE": str(secret),
    }
    with running_c0(env, tmp_path / "c0.log") as c0:
        request = connector_pb2.CreateTaskRequest(
            template=python_template("pass"),
            output_prefix="s3://b/raw/oidc/a0/0",
            task_execution_metadata=execution_metadata(run="oidc"),
        )
        meta = c0.CreateTask(request, timeout=30).resource_meta

        poll_until_done(c0, meta, (TaskExecution.SUCCEEDED,), 60)
    assert front.refused == 0 and provider.grants


# ---- plaintext and malformed credentials ----
@pytest.mark.pure
@pytest.mark.parametrize(
    "credentials",
    [
        {"auth_token": "t0k3n"},
        {"auth_username": "u", "auth_password": "p4ss"},
        {"auth_exec_cmd": "print-token"},
        {"oidc_token_url": "https://idp.example.com/token", "oidc_client_id": "c", "oidc_client_secret": "s"},
    ],
)
def test_credentials_over_plaintext_to_a_remote_armada_are_refused_unless_allowed(credentials):
    with pytest.raises(InvalidConfig, match="armada_allow_plaintext_auth") as info:
        resolve_settings(armada_url="armada.example.com:50051", **credentials)
    assert "t0k3n" not in str(info.value) and "p4ss" not in str(info.value)
    resolve_settings(armada_url="armada.example.com:50051", armada_allow_plaintext_auth=True, **credentials)
    resolve_settings(armada_url="armada.example.com:50051", armada_tls=True, **credentials)
    resolve_settings(armada_url="127.0.0.1:50051", **credentials)
    resolve_settings(armada_url="localhost:50051", **credentials)


@pytest.mark.pure
def test_a_plaintext_token_endpoint_off_this_machine_is_refused():
    with pytest.raises(InvalidConfig, match="client secret would be sent in the clear"):
        resolve_settings(
            armada_url="127.0.0.1:1",
            oidc_token_url="http://idp.example.com/t",
            oidc_client_id="c",
            oidc_client_secret="s",
        )


@pytest.mark.pure
def test_a_token_with_a_line_break_is_refused_without_showing_it(monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "abc\ndef-SENTINEL")
    with pytest.raises(InvalidConfig, match="line breaks") as info:
        resolve_settings()
    assert "SENTINEL" not in str(info.value)
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "abcdef\n")  # a mounted file's trailing newline
    assert resolve_settings().auth_token.get_secret_value() == "abcdef"


def test_an_exec_token_gets_a_job_through_the_embedded_servers_own_auth(tmp_path):
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    _, script = _token_command(tmp_path, "exec-token-41")
    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), auth=("bearer:exec-token-41",))) as armada:
        armada_flyte.configure(
            armada_url=armada.url,
            node_groups_preset="embedded",
            auth_exec_cmd=sys.executable,
            auth_exec_args=[str(script)],
        )
        assert _submit_and_finish().phase == TaskExecution.SUCCEEDED
