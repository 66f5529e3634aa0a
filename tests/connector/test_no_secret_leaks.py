"""A run configured with sentinel secrets leaks none of them: not into a log line, an error message,
the doctor's or dry-run's output, the serialised task template, nor the Armada job spec.

Real parts: the embedded server requiring the credentials (its own `auth`, or the OIDC front of
the tests for client credentials), real pods, moto S3, the connector in-process and the CLI.
"""

from __future__ import annotations

import json
import logging
import pathlib

import grpc
import pytest
from armada_client.armada import job_pb2, job_pb2_grpc
from flyteidl2.core.execution_pb2 import TaskExecution
from google.protobuf import json_format

import armada_flyte
from armada_flyte.admin.cli import main
from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.service import ArmadaConnector
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.errors import ArmadaFlyteError
from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, LocalBlobServer

from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.auth_front import auth_front
from support.oidc_provider import oidc_provider

PROJECT = pathlib.Path(__file__).parents[1] / "e2e" / "project"
TOKEN = "SENTINEL-token-6b1f"
PASSWORD = "SENTINEL-password-0c9e"
CLIENT_SECRET = "SENTINEL-client-secret-77d2"
BLOB_SECRET = "SENTINEL-blob-secret-a41c"
SECRETS = (TOKEN, PASSWORD, CLIENT_SECRET, BLOB_SECRET)
TERMINAL = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED, TaskExecution.ABORTED}


@pytest.fixture(scope="module")
def store():
    server = LocalBlobServer().start()
    yield server
    server.stop()


POD_SECRETS = {BLOB_CREDENTIALS_SECRET: {"access_key_id": ACCESS_KEY, "secret_access_key": BLOB_SECRET}}
"""The cluster's Secret the pods read the blob keys from (the job spec names it, never the values)."""


def _blob(store):
    return {
        "blob_endpoint": store.endpoint,
        "blob_access_key": ACCESS_KEY,
        "blob_secret_key": BLOB_SECRET,
        "blob_credentials_secret": BLOB_CREDENTIALS_SECRET,
    }


def _job_spec(url: str, metadata, job_id: str) -> str:
    with grpc.insecure_channel(url) as channel:
        details = job_pb2_grpc.JobsStub(channel).GetJobDetails(
            job_pb2.JobDetailsRequest(job_ids=[job_id], expand_job_spec=True), metadata=metadata, timeout=30
        )
    return json_format.MessageToJson(details)


def _exercise(url: str) -> tuple[list[str], str, str]:
    """Submit a task that succeeds and one that fails, read logs, cancel; the texts a user sees."""
    texts: list[str] = []

    async def scenario():
        connector = ArmadaConnector()
        metas = []
        for code in ("print('fine')", "import sys; print('bad', file=sys.stderr); sys.exit(3)"):
            template = python_template(code)
            texts.append(template.SerializeToString().decode("latin-1"))
            texts.append(json_format.MessageToJson(template))
            meta = await connector.create(
                template, "s3://flyte/raw/leak/a0/0", task_execution_metadata=execution_metadata()
            )
            metas.append(meta)
            texts.append(json.dumps(meta.__dict__, default=str))
        for meta in metas:
            resource = await wait_for(connector, meta, TERMINAL)
            texts.append(resource.message or "")
            texts.append(json.dumps(resource.custom_info, default=str))
            texts.extend((await connector.get_logs(meta)).body.results)
            await connector.delete(meta)
        api = ArmadaApi(armada_flyte.connector.config.settings.resolve_settings())
        metadata = api.auth_metadata()
        await api.close()
        return metas, metadata

    metas, metadata = run(scenario())
    spec = _job_spec(url, metadata, metas[0].job_id)
    return texts, spec, metas[0].job_id


def _cli_texts(capsys, url: str) -> list[str]:
    texts = []
    for argv in (["doctor", "--queue", "flyte", "--armada-url", url], ["doctor", "--json", "--armada-url", url]):
        main(argv)
        out = capsys.readouterr()
        texts += [out.out, out.err]
    main(["dry-run", "workflows:summarise", "--root", str(PROJECT), "--preset", "embedded"])
    out = capsys.readouterr()
    return [*texts, out.out, out.err]


def _errors() -> list[str]:
    """Messages of errors a misconfiguration gives, with the secrets still set."""
    texts = []
    tries = ({"auth_username": "x"}, {"auth_token": "y"}, {"armada_url": "armada.example.com:1"}, {"grpc_retries": -1})
    for extra in tries:
        try:
            armada_flyte.configure(**extra)
        except ArmadaFlyteError as exc:
            texts.append(str(exc))
    assert len(texts) >= 3
    return texts


def _assert_clean(texts, caplog):
    logged = [record.getMessage() for record in caplog.records]
    logged += [record.exc_text or "" for record in caplog.records]
    everything = "\n".join([*texts, *logged])
    assert len(caplog.records) > 0  # the run did log: the scan saw something
    for secret in SECRETS:
        assert secret not in everything, f"{secret} leaked"


@pytest.mark.parametrize("scheme", ["bearer", "basic"])
def test_static_credentials_never_leak(store, caplog, capsys, monkeypatch, scheme):
    caplog.set_level(logging.DEBUG)
    spec = f"bearer:{TOKEN}" if scheme == "bearer" else f"basic:ann:{PASSWORD}"
    credentials = {"auth_token": TOKEN} if scheme == "bearer" else {"auth_username": "ann", "auth_password": PASSWORD}
    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), auth=(spec,), secrets=POD_SECRETS)) as armada:
        armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded", **_blob(store), **credentials)
        for name, value in {**credentials, **_blob(store)}.items():
            monkeypatch.setenv(f"ARMADA_FLYTE_{name.upper()}", value)  # the CLI reads the same from its env
        monkeypatch.setenv("ARMADA_FLYTE_NODE_GROUPS_PRESET", "embedded")
        texts, job_spec, _ = _exercise(armada.url)
        texts += _cli_texts(capsys, armada.url)
        texts += _errors()
    assert BLOB_CREDENTIALS_SECRET in job_spec  # the spec's env was scanned: it names the Secret, not its values
    _assert_clean([*texts, job_spec], caplog)


def test_client_credentials_never_leak(store, caplog, capsys, monkeypatch):
    caplog.set_level(logging.DEBUG)
    with (
        oidc_provider("c0", CLIENT_SECRET) as provider,
        EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), secrets=POD_SECRETS)) as armada,
    ):
        with auth_front(armada.url, provider.valid) as (url, _):
            settings = {
                "armada_url": url,
                "node_groups_preset": "embedded",
                "oidc_token_url": provider.token_url,
                "oidc_client_id": "c0",
                "oidc_client_secret": CLIENT_SECRET,
                **_blob(store),
            }
            armada_flyte.configure(**settings)
            for name, value in settings.items():
                monkeypatch.setenv(f"ARMADA_FLYTE_{name.upper()}", value)
            texts, job_spec, _ = _exercise(url)
            texts += _cli_texts(capsys, url)
            texts += _errors()
    assert BLOB_CREDENTIALS_SECRET in job_spec  # the spec's env was scanned: it names the Secret, not its values
    _assert_clean([*texts, job_spec], caplog)
