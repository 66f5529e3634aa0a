"""The backend's execution context through a real `c0` over gRPC: namespace, service account, labels,
annotations and interruptible reach the job Armada received (read back with Jobs.GetJobDetails). What a
task may choose beyond them (its own namespace, queue, service account): tests/connector/test_c0_tenancy.py."""

from __future__ import annotations

import json

import pytest
from armada_client.armada import job_pb2, job_pb2_grpc
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from support.armada_channels import armada_channel
from support.armada_templates import execution_metadata, python_template
from support.c0_service import poll_until_done, running_c0

BACKEND_NAMESPACES = ["proj-dev", "team-ns", "armada-proj-dev"]


@pytest.fixture(scope="module")
def armada():
    """The default cluster plus the namespaces these jobs use (a pod in a missing namespace fails, as on Kubernetes)."""
    import yaml

    from armada_flyte.cluster.cluster_file import DEFAULT_CLUSTER_FILE, Cluster
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    data = yaml.safe_load(DEFAULT_CLUSTER_FILE.read_text())
    cluster = Cluster.from_mapping({**data, "namespaces": BACKEND_NAMESPACES})
    from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

    with EmbeddedArmada(EmbeddedConfig(cluster, port=0, queues=("flyte",))) as server:
        server.add_secret(BLOB_CREDENTIALS_SECRET, {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY})
        yield server


@pytest.fixture(scope="module")
def blob():
    from armada_flyte.local.stack import LocalBlobServer

    store = LocalBlobServer().start()
    yield store
    store.stop()


def _c0_env(armada, blob, **extra: str) -> dict[str, str]:
    from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

    return {
        "ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET": BLOB_CREDENTIALS_SECRET,
        "ARMADA_URL": armada.url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "FLYTE_BLOB_ENDPOINT": blob.endpoint,
        "FLYTE_BLOB_ACCESS_KEY": ACCESS_KEY,
        "FLYTE_BLOB_SECRET_KEY": SECRET_KEY,
        **extra,
    }


@pytest.fixture
def c0(armada, blob, tmp_path):
    with running_c0(_c0_env(armada, blob), tmp_path / "c0.log") as stub:
        yield stub


def _backend_metadata(run: str, interruptible: bool):
    meta = execution_metadata(run=run, action="a3")
    meta.namespace = "proj-dev"
    meta.k8s_service_account = "flyte-runner"
    meta.labels.update({"team": "vision/research", "execution-id": run, "armadaproject.io/gangId": "sneaky"})
    meta.annotations.update({"cost-center": "ml platform #42", "bad key!": "dropped"})
    meta.interruptible = interruptible
    return meta


def _received(armada, job_id: str):
    """The job exactly as Armada stored it."""
    with armada_channel(armada.url) as channel:
        request = job_pb2.JobDetailsRequest(job_ids=[job_id], expand_job_spec=True)
        return job_pb2_grpc.JobsStub(channel).GetJobDetails(request, timeout=10).job_details[job_id].job_spec


def _create(c0, template, meta) -> tuple[bytes, str]:
    request = connector_pb2.CreateTaskRequest(
        template=template, output_prefix="s3://bucket/raw/ctx/a3/0", task_execution_metadata=meta
    )
    resource_meta = c0.CreateTask(request, timeout=30).resource_meta
    return resource_meta, json.loads(resource_meta)["job_id"]


DONE = (TaskExecution.SUCCEEDED, TaskExecution.FAILED)


def test_backend_namespace_service_account_labels_and_interruptible_reach_armada(c0, armada):
    resource_meta, job_id = _create(c0, python_template("print('ctx')"), _backend_metadata("ctxrun", True))
    job = _received(armada, job_id)

    assert job.namespace == "proj-dev"  # the backend's namespace: no ArmadaConfig.namespace, no admin template
    assert json.loads(resource_meta)["namespace"] == "proj-dev"  # so logs are read from the right namespace
    assert job.pod_spec.serviceAccountName == "flyte-runner"
    assert job.labels["team"] == "vision-research"  # made a valid label value
    assert job.labels["execution-id"] == "ctxrun"
    assert job.labels["flyte.org/connector"] == "armada"  # the connector's own labels stay
    assert job.annotations["cost-center"] == "ml platform #42"  # annotations keep any text
    assert "bad key!" not in job.annotations
    assert "armadaproject.io/gangId" not in job.labels and "armadaproject.io/gangId" not in job.annotations
    assert job.pod_spec.priorityClassName == "armada-preemptible"
    assert poll_until_done(c0, resource_meta, DONE, 60).phase == TaskExecution.SUCCEEDED


def test_non_interruptible_backend_task_gets_the_non_preemptible_class(c0, armada):
    _, job_id = _create(c0, python_template("pass"), _backend_metadata("ctxrun2", False))
    assert _received(armada, job_id).pod_spec.priorityClassName == "armada-default"


def test_admin_namespace_template_wins_over_the_backends_namespace(armada, blob, tmp_path):
    env = _c0_env(armada, blob, ARMADA_FLYTE_NAMESPACE_TEMPLATE="armada-{project}-{domain}")
    with running_c0(env, tmp_path / "c0.log") as stub:
        _, job_id = _create(stub, python_template("pass"), _backend_metadata("ctxrun4", False))
    assert _received(armada, job_id).namespace == "armada-proj-dev"
