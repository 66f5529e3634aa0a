"""Pods read the cluster's Kubernetes Secrets as a kubelet gives them: `secretKeyRef` env vars,
`envFrom.secretRef`, and `secret` volumes as files; a missing required Secret or key keeps the
container from starting (Kubernetes' CreateContainerConfigError), an optional one is just absent.
Pods are submitted over gRPC with armada_client and really run (process pod runner)."""

from __future__ import annotations

import base64
import json

import pytest
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.cluster.secrets import SecretStore, parse_secret_argument
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.errors import InvalidConfig

from support.job_events import job_set_events, kind
from support.pods import item, pod, python, submit_one, unique, with_secret_volume
from support.waiting import job_error, wait_for_state

pytestmark = pytest.mark.embedded_only

REPORT = (
    "import json, os, pathlib, sys; d = os.environ.get('SECRET_DIR', '');"
    "files = {p.name: p.read_text() for p in pathlib.Path(d).iterdir()} if d else {};"
    "print(json.dumps({'env': dict(os.environ), 'files': files}))"
)


def secret_env(name: str, secret: str, key: str, optional: bool = False) -> core.EnvVar:
    selector = core.SecretKeySelector(localObjectReference=core.LocalObjectReference(name=secret), key=key)
    if optional:
        selector.optional = True
    return core.EnvVar(name=name, valueFrom=core.EnvVarSource(secretKeyRef=selector))


@pytest.fixture
def secret_name(embedded_armada) -> str:
    name = unique("creds")
    embedded_armada.add_secret(name, {"api_key": "s3cr3t-value", "token": "tok-123"})
    return name


def report_of(armada, job_id: str) -> dict:
    return json.loads(next(line for line in armada.logs(job_id) if line.startswith("{")))


def test_secret_key_refs_env_from_and_secret_volumes_reach_the_container(
    embedded_armada, client, queue, job_set, secret_name
) -> None:
    spec = pod(python(REPORT), env={"SECRET_DIR": "/etc/creds"})
    container = spec.containers[0]
    container.env.append(secret_env("API_KEY", secret_name, "api_key"))
    container.envFrom.append(
        core.EnvFromSource(prefix="ALL_", secretRef=core.SecretEnvSource(localObjectReference={"name": secret_name}))
    )
    with_secret_volume(spec, secret_name, "/etc/creds", items=[("token", "the-token")])
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    report = report_of(embedded_armada, job_id)
    assert report["env"]["API_KEY"] == "s3cr3t-value"
    assert report["env"]["ALL_api_key"] == "s3cr3t-value" and report["env"]["ALL_token"] == "tok-123"
    assert report["env"]["SECRET_DIR"].endswith("/etc/creds")  # mapped into the pod's sandbox
    assert report["files"] == {"the-token": "tok-123"}
    assert not any(line for line in job_set_events(client, queue, job_set) if b"s3cr3t" in line.SerializeToString())


def test_a_volume_without_items_gets_every_key_as_a_file(embedded_armada, client, queue, job_set, secret_name) -> None:
    spec = with_secret_volume(pod(python(REPORT), env={"SECRET_DIR": "/etc/all"}), secret_name, "/etc/all")
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert report_of(embedded_armada, job_id)["files"] == {"api_key": "s3cr3t-value", "token": "tok-123"}


@pytest.mark.parametrize(
    "reference, reason",
    [
        (lambda name: secret_env("X", "no-such-secret", "k"), 'secret "no-such-secret" not found'),
        (lambda name: secret_env("X", name, "missing_key"), "couldn't find key missing_key in Secret default/"),
    ],
    ids=["missing secret", "missing key"],
)
def test_a_missing_secret_or_key_fails_the_pod_before_it_runs(
    embedded_armada, client, queue, job_set, secret_name, tmp_path, reference, reason
) -> None:
    marker = tmp_path / "ran"
    spec = pod(python(f"open({str(marker)!r}, 'w').write('ran')"))
    spec.containers[0].env.append(reference(secret_name))
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    error = job_error(client, job_id)
    assert "CreateContainerConfigError" in error and reason in error
    assert not marker.exists()
    kinds = [kind(m) for m in job_set_events(client, queue, job_set) if getattr(m.message, kind(m)).job_id == job_id]
    assert kinds[-2:] == ["pending", "failed"]
    [failed] = [m.message.failed for m in job_set_events(client, queue, job_set) if kind(m) == "failed"][-1:]
    assert failed.container_statuses[0].reason == "CreateContainerConfigError"


def test_a_missing_secret_volume_fails_the_pod(client, queue, job_set) -> None:
    spec = with_secret_volume(pod(python("pass")), "absent-volume-secret", "/etc/absent")
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    error = job_error(client, job_id)
    assert 'MountVolume.SetUp failed for volume "creds" : secret "absent-volume-secret" not found' in error


def test_optional_references_to_missing_secrets_are_left_out(embedded_armada, client, queue, job_set) -> None:
    spec = pod(python(REPORT), env={"SECRET_DIR": ""})
    spec.containers[0].env.append(secret_env("MAYBE", "not-there", "k", optional=True))
    with_secret_volume(spec, "not-there", "/etc/maybe", optional=True)
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert "MAYBE" not in report_of(embedded_armada, job_id)["env"]


def test_secrets_file_reads_kubernetes_secret_manifests(tmp_path) -> None:
    path = tmp_path / "secrets.yaml"
    encoded = base64.b64encode(b"from-data").decode()
    path.write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: one}\nstringData: {a: plain}\n---\n"
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: two}}\ndata: {{b: {encoded}}}\n"
    )
    with EmbeddedArmada(EmbeddedConfig(secrets_file=path, secrets={"three": {"c": "given"}})) as armada:
        assert armada.secrets.get("one") == {"a": b"plain"}
        assert armada.secrets.get("two") == {"b": b"from-data"}
        assert armada.secrets.get("three") == {"c": b"given"}


@pytest.mark.pure
def test_bad_secrets_are_refused_with_the_fix(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(InvalidConfig, match="kind: Secret"):
        SecretStore().load_file(path)
    with pytest.raises(InvalidConfig, match="DNS|lower-case"):
        SecretStore().put("Not_A_Name", {"k": "v"})
    with pytest.raises(InvalidConfig, match="KEY=VALUE") as caught:
        parse_secret_argument("creds", ["novalue"])
    assert "novalue" not in str(caught.value)
    assert parse_secret_argument("creds", ["a=1", "b=x=y"]) == ("creds", {"a": "1", "b": "x=y"})
