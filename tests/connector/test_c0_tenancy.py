"""The admin's tenancy policy through a real `c0` over gRPC, as a Flyte backend drives it: a backend task
naming another namespace, a queue outside the allow-list, or a pod template with hostNetwork, a privileged
container or another service account is refused for good (FAILED at the first GetTask, with a typed error
naming the setting, nothing submitted); with the admin's settings allowing it, Armada receives it as asked.
The policy's table: tests/connector/test_tenancy.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from armada_client.armada import job_pb2, job_pb2_grpc
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte import ArmadaConfig

from support.armada_channels import armada_channel
from support.armada_templates import execution_metadata, python_template, with_pod_spec
from support.c0_service import ARMADA_TASKS, c0_env, running_c0

NAMESPACES = ["proj-dev", "team-ns"]
QUEUES = ("flyte", "proj", "other")


@pytest.fixture(scope="module")
def armada():
    """The default cluster with the namespaces these jobs use, and the queues they name."""
    import yaml

    from armada_flyte.cluster.cluster_file import DEFAULT_CLUSTER_FILE, Cluster
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
    from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

    data = yaml.safe_load(DEFAULT_CLUSTER_FILE.read_text())
    cluster = Cluster.from_mapping({**data, "namespaces": NAMESPACES})
    with EmbeddedArmada(EmbeddedConfig(cluster, port=0, queues=QUEUES)) as server:
        server.add_secret(BLOB_CREDENTIALS_SECRET, {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY})
        yield server


@pytest.fixture(scope="module")
def strict_c0(armada, blob, tmp_path_factory):
    """The defaults, but for queues: the project's own queue and `flyte`."""
    env = c0_env(armada.url, blob.endpoint, allowed_queues="{project},flyte")
    with running_c0(env, tmp_path_factory.mktemp("strict") / "c0.log") as stub:
        yield stub


@pytest.fixture(scope="module")
def allowing_c0(armada, blob, tmp_path_factory):
    """An admin who allows the team namespaces, the project's queue and privileged pod templates."""
    settings = {"allowed_namespaces": "team-*", "allowed_queues": "{project}", "allow_privileged_pod_templates": "true"}
    log = tmp_path_factory.mktemp("allowing") / "c0.log"
    with running_c0(c0_env(armada.url, blob.endpoint, **settings), log) as stub:
        yield stub


def backend_metadata(run: str) -> Any:
    meta = execution_metadata(run=run, action="a1")  # project proj, domain dev
    meta.namespace, meta.k8s_service_account = "proj-dev", "flyte-runner"
    return meta


def pod_template(**pod: Any) -> Any:
    """A task whose pod template's spec has these fields beside its one container (`primary`)."""
    return with_pod_spec(python_template("pass", ArmadaConfig(queue="proj")), **pod)


def create(c0: Any, template: Any, run: str) -> bytes:
    request = connector_pb2.CreateTaskRequest(
        template=template, output_prefix=f"s3://bucket/raw/{run}/a1/0", task_execution_metadata=backend_metadata(run)
    )
    return c0.CreateTask(request, timeout=30).resource_meta


def received(armada: Any, resource_meta: bytes) -> Any:
    """The job exactly as Armada stored it."""
    job_id = json.loads(resource_meta)["job_id"]
    assert job_id, f"nothing was submitted: {resource_meta!r}"
    with armada_channel(armada.url) as channel:
        request = job_pb2.JobDetailsRequest(job_ids=[job_id], expand_job_spec=True)
        return job_pb2_grpc.JobsStub(channel).GetJobDetails(request, timeout=10).job_details[job_id].job_spec


TEAM_NS = (
    "another namespace",
    lambda: python_template("pass", ArmadaConfig(namespace="team-ns", queue="proj"), sources={"namespace": "task"}),
)
OTHER_QUEUE = ("a queue outside the allow-list", lambda: python_template("pass", ArmadaConfig(queue="other")))
HOST_NETWORK = ("hostNetwork", lambda: pod_template(hostNetwork=True))
PRIVILEGED = ("a privileged container", lambda: pod_template(primary={"securityContext": {"privileged": True}}))
OWN_ACCOUNT = ("another service account", lambda: pod_template(serviceAccountName="team-b-admin"))

REFUSALS = [
    (*TEAM_NS, "allowed_namespaces", "ARMADA_FLYTE_ALLOWED_NAMESPACES", "'team-ns'"),
    (*OTHER_QUEUE, "allowed_queues", "ARMADA_FLYTE_ALLOWED_QUEUES", "'other'"),
    (*HOST_NETWORK, "allow_privileged_pod_templates", "ARMADA_FLYTE_ALLOW_PRIVILEGED_POD_TEMPLATES", "hostNetwork"),
    (
        *PRIVILEGED,
        "allow_privileged_pod_templates",
        "ARMADA_FLYTE_ALLOW_PRIVILEGED_POD_TEMPLATES",
        "containers[primary].securityContext.privileged=true",
    ),
    (*OWN_ACCOUNT, "allow_privileged_pod_templates", "ARMADA_FLYTE_ALLOW_PRIVILEGED_POD_TEMPLATES", "team-b-admin"),
]


@pytest.mark.parametrize("what, template, setting, env_name, named", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_backend_task_asking_beyond_the_admins_policy_is_refused_for_good_naming_the_setting(
    strict_c0, what, template, setting, env_name, named
):
    resource_meta = create(strict_c0, template(), f"refused-{setting.replace('_', '-')}-{len(named)}")
    assert json.loads(resource_meta)["job_id"] == ""  # nothing was submitted
    request = connector_pb2.GetTaskRequest(resource_meta=resource_meta, task_category=ARMADA_TASKS)
    resource = strict_c0.GetTask(request, timeout=30).resource
    assert resource.phase == TaskExecution.FAILED  # permanent: the backend does not retry it
    assert resource.custom_info["error"]["code"] == "TenancyRefused"
    assert resource.custom_info["error"]["recoverable"] is False
    assert setting in resource.message and env_name in resource.message and named in resource.message


def test_a_backend_task_within_the_policy_is_submitted(strict_c0, armada):
    job = received(armada, create(strict_c0, python_template("pass", ArmadaConfig(queue="proj")), "within"))
    assert job.namespace == "proj-dev" and job.pod_spec.serviceAccountName == "flyte-runner"


def test_the_admin_allowing_a_namespace_lets_the_task_run_there(allowing_c0, armada):
    assert received(armada, create(allowing_c0, TEAM_NS[1](), "allowed-ns")).namespace == "team-ns"


def test_the_admin_allowing_the_projects_queue_refuses_the_others(allowing_c0, armada):
    assert received(armada, create(allowing_c0, pod_template(), "allowed-queue")).queue == "proj"
    resource_meta = create(allowing_c0, OTHER_QUEUE[1](), "refused-queue")
    request = connector_pb2.GetTaskRequest(resource_meta=resource_meta, task_category=ARMADA_TASKS)
    assert "allowed_queues" in allowing_c0.GetTask(request, timeout=30).resource.message


def test_the_admin_allowing_privileged_pod_templates_lets_them_through_as_written(allowing_c0, armada):
    template = pod_template(
        hostNetwork=True, serviceAccountName="team-b-admin", primary={"securityContext": {"privileged": True}}
    )
    job = received(armada, create(allowing_c0, template, "allowed-privileged"))
    assert job.pod_spec.hostNetwork and job.pod_spec.serviceAccountName == "team-b-admin"
    assert job.pod_spec.containers[0].securityContext.privileged


def test_a_create_through_c0_without_metadata_is_held_to_the_policy_too(strict_c0):
    """c0 hands the connector the request's metadata message, set or not: only in-process runs go free."""
    request = connector_pb2.CreateTaskRequest(template=TEAM_NS[1](), output_prefix="s3://bucket/raw/bare/a0/0")
    resource_meta = strict_c0.CreateTask(request, timeout=30).resource_meta
    assert json.loads(resource_meta)["refusal_code"] == "TenancyRefused"
