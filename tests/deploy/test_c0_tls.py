"""The connector service behind its door: `armada-flyte c0` as the Deployment runs it (TLS from the
documented openssl recipe, a read-only home and working folder, one writable TMPDIR, the image's uid),
against the embedded Armada over TLS, reached as Flyte's backend reaches it."""

from __future__ import annotations

import os
import pathlib
import subprocess

import grpc
import pytest
from flyteidl2.connector import connector_pb2, service_pb2_grpc
from flyteidl2.core.execution_pb2 import TaskExecution
from grpc_health.v1 import health_pb2, health_pb2_grpc

from armada_flyte import ArmadaConfig
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY, LocalBlobServer

from support.armada_templates import execution_metadata, python_template
from support.c0_door import (
    CONNECTOR_SERVICE,
    PodLayout,
    client_certificate,
    connector_certs,
    running_door_c0,
    service_folder,
)
from support.c0_service import ARMADA_TASKS, c0_env, poll_until_done
from support.tls_files import self_signed

DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy"


@pytest.fixture(scope="module")
def reachable():
    """Where the service user's files go: a folder it can reach."""
    with service_folder() as folder:
        yield folder


@pytest.fixture
def reachable_tmp(reachable, tmp_path):
    folder = reachable / tmp_path.name
    folder.mkdir(mode=0o755)
    return folder


@pytest.fixture(scope="module")
def armada_tls(reachable):
    """Armada's certificate, in a folder the service user can read (the pod's armada-ca ConfigMap)."""
    folder = reachable / "armada-ca"
    folder.mkdir(mode=0o755)
    tls = self_signed(folder)
    tls.cert.chmod(0o644)
    return tls


@pytest.fixture(scope="module")
def armada(armada_tls):
    with EmbeddedArmada(
        EmbeddedConfig(port=0, queues=("flyte",), tls_cert=armada_tls.cert, tls_key=armada_tls.key)
    ) as server:
        server.add_secret(BLOB_CREDENTIALS_SECRET, {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY})
        yield server


@pytest.fixture(scope="module")
def blob():
    store = LocalBlobServer().start()
    yield store
    store.stop()


@pytest.fixture(scope="module")
def certs(reachable):
    return connector_certs(reachable / "tls", "localhost")


@pytest.fixture(scope="module")
def layout(reachable):
    pod = reachable / "pod"
    pod.mkdir()
    return PodLayout.make(pod)


@pytest.fixture(scope="module")
def pod_env(armada, armada_tls, blob):
    """The Deployment's settings: Armada over TLS, its CA from a mounted file."""
    return c0_env(armada.url, blob.endpoint, armada_tls="true", armada_ca_cert=str(armada_tls.cert))


@pytest.fixture(scope="module")
def door(layout, certs, pod_env, tmp_path_factory):
    args = [f"--tls-cert={certs / 'tls.crt'}", f"--tls-key={certs / 'tls.key'}"]
    with running_door_c0(layout, args, pod_env, tmp_path_factory.mktemp("log") / "c0.log") as c0:
        yield c0


def tls_channel(port: int, ca: bytes, **client) -> grpc.Channel:
    return grpc.secure_channel(f"localhost:{port}", grpc.ssl_channel_credentials(ca, **client))


def create_request(run: str) -> connector_pb2.CreateTaskRequest:
    return connector_pb2.CreateTaskRequest(
        template=python_template("print('through the door')", ArmadaConfig(architecture="amd64")),
        output_prefix=f"s3://bucket/raw/{run}/a0/0",
        task_execution_metadata=execution_metadata(run=run),
    )


def test_a_task_created_over_tls_runs_to_success_and_nothing_is_written_outside_tmp(door, certs, layout):
    with tls_channel(door.port, (certs / "ca.crt").read_bytes()) as channel:
        stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
        meta = stub.CreateTask(create_request("door"), timeout=60).resource_meta
        resource = poll_until_done(stub, meta, (TaskExecution.SUCCEEDED, TaskExecution.FAILED), 120)
        assert resource.phase == TaskExecution.SUCCEEDED, f"{resource.message}\n{door.tail()}"
        stub.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS), timeout=30)
    assert door.process.poll() is None, door.tail()
    assert layout.written_outside_tmp(door.started) == []


def _refusal(channel: grpc.Channel) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as refused:
        service_pb2_grpc.ConnectorMetadataServiceStub(channel).ListConnectors(
            connector_pb2.ListConnectorsRequest(), timeout=10
        )
    return refused.value.code()


def test_a_client_that_does_not_trust_the_connectors_ca_is_refused(door, tmp_path):
    with tls_channel(door.port, self_signed(tmp_path).cert.read_bytes()) as channel:
        assert _refusal(channel) == grpc.StatusCode.UNAVAILABLE


def test_a_plaintext_call_to_the_connector_port_is_refused(door):
    with grpc.insecure_channel(f"127.0.0.1:{door.port}") as channel:
        assert _refusal(channel) == grpc.StatusCode.UNAVAILABLE


def test_the_health_port_answers_health_in_plaintext_and_nothing_else(door):
    with grpc.insecure_channel(f"127.0.0.1:{door.health_port}") as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=CONNECTOR_SERVICE), timeout=10
        )
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as absent:
            service_pb2_grpc.AsyncConnectorServiceStub(channel).CreateTask(create_request("health"), timeout=10)
    assert absent.value.code() == grpc.StatusCode.UNIMPLEMENTED


def _backend_dial(backend_dial, endpoint: str, cert_dir: str | None) -> subprocess.CompletedProcess[str]:
    routing = _routing()
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_DIR", "SSL_CERT_FILE")}
    if cert_dir is not None:
        env["SSL_CERT_DIR"] = cert_dir
    command = [str(backend_dial), "-endpoint", endpoint, "-calls", "4"]
    command += ["-service-config", routing["defaultServiceConfig"]] + (["-insecure"] if routing["insecure"] else [])
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def _routing() -> dict:
    import yaml

    document = yaml.safe_load((DEPLOY / "flyte" / "connector-routing.yaml").read_text())
    return document["plugins"]["connector-service"]["connectors"]["armada"]


@pytest.mark.timeout(1200)  # the first build of the Go stand-in
def test_flytes_backend_client_reaches_it_when_the_ca_is_in_its_ssl_cert_dir(door, certs, backend_dial, tmp_path):
    """The shipped routing (`insecure: false`, round_robin) and the CA recipe of
    deploy/flyte/backend-trusts-connector-ca.yaml, through the backend's own client behaviour."""
    ca_dir = tmp_path / "armada-flyte-connector-ca"
    ca_dir.mkdir()
    (ca_dir / "ca.crt").write_bytes((certs / "ca.crt").read_bytes())
    endpoint = _routing()["endpoint"].replace(
        "armada-flyte-connector.flyte.svc.cluster.local:8000", f"localhost:{door.port}"
    )
    assert endpoint == f"dns:///localhost:{door.port}"

    trusted = _backend_dial(backend_dial, endpoint, f"/etc/ssl/certs:{ca_dir}")
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout.split() == ["SERVING"] * 4

    untrusted = _backend_dial(backend_dial, endpoint, None)
    assert untrusted.returncode == 1
    assert "certificate signed by unknown authority" in untrusted.stderr


def test_a_renewed_certificate_is_served_without_a_restart(layout, pod_env, reachable_tmp, tmp_path):
    """The kubelet renews a Secret volume by pointing its ..data link at a new folder: so does this test."""
    secret = reachable_tmp / "secret"
    secret.mkdir()
    secret.chmod(0o755)
    old = connector_certs(secret / "..2024_old", "localhost")
    (secret / "..data").symlink_to("..2024_old")
    for name in ("tls.crt", "tls.key"):
        (secret / name).symlink_to(f"..data/{name}")
    args = [f"--tls-cert={secret / 'tls.crt'}", f"--tls-key={secret / 'tls.key'}"]
    with running_door_c0(layout, args, pod_env, tmp_path / "c0.log") as c0:
        assert _lists_connectors(c0.port, (old / "ca.crt").read_bytes())
        new = connector_certs(secret / "..2025_new", "localhost")
        (secret / "..data_tmp").symlink_to("..2025_new")
        os.replace(secret / "..data_tmp", secret / "..data")

        assert _lists_connectors(c0.port, (new / "ca.crt").read_bytes()), c0.tail()
        assert not _lists_connectors(c0.port, (old / "ca.crt").read_bytes())


def _lists_connectors(port: int, ca: bytes, **client: bytes) -> bool:
    with tls_channel(port, ca, **client) as channel:
        try:
            answer = service_pb2_grpc.ConnectorMetadataServiceStub(channel).ListConnectors(
                connector_pb2.ListConnectorsRequest(), timeout=10
            )
        except grpc.RpcError:
            return False
    return [c.name for connector in answer.connectors for c in connector.supported_task_categories] == ["armada"]


def test_with_a_client_ca_only_clients_holding_its_certificates_are_served(layout, pod_env, reachable_tmp, tmp_path):
    certs = connector_certs(reachable_tmp / "tls", "localhost")
    args = [f"--tls-cert={certs / 'tls.crt'}", f"--tls-key={certs / 'tls.key'}", f"--tls-client-ca={certs / 'ca.crt'}"]
    cert, key = client_certificate(certs / "ca.crt", certs / "ca.key")
    ca = (certs / "ca.crt").read_bytes()
    with running_door_c0(layout, args, pod_env, tmp_path / "c0.log") as c0:
        assert not _lists_connectors(c0.port, ca)
        assert _lists_connectors(c0.port, ca, private_key=key, certificate_chain=cert), c0.tail()
