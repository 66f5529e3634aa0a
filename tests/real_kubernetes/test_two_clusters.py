"""Two clusters, one Armada: Armada's own executor runs the Kubernetes cluster with the arm64 nodes, ours
(`armada-flyte executor`, no Kubernetes) the amd64 nodes (`scripts/real-armada.sh up --two-clusters`).
Armada's scheduler places each job by architecture across both; the connector's custom_info and the view's
job row say which cluster ran it."""

from __future__ import annotations

import pathlib
from typing import Iterator

import pytest
from armada_client.armada import job_pb2, submit_pb2
from armada_client.client import ArmadaClient
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte import ArmadaConfig

from support.armada_channels import armada_channel, logged_in_to
from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.pods import arm64_pod, item, pod, python, submit_one, unique
from support.real_armada import bed_of_its_own, ensure_queues, uses_real_armada
from support.real_kubernetes import job_pod
from support.waiting import wait_for_state

KUBERNETES_CLUSTER, OUR_CLUSTER = "real-kubernetes-bed", "armada-flyte-amd64"
QUEUE = "e2e-test-queue"
DONE = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED, TaskExecution.ABORTED}


@pytest.fixture(scope="module")
def two_clusters(request: pytest.FixtureRequest, bed_secrets_file: pathlib.Path) -> Iterator[dict[str, str]]:
    if not uses_real_armada(request.config):
        pytest.skip("starts a bed of its own with two clusters: run with --armada real")
    with bed_of_its_own("--two-clusters", REAL_ARMADA_SECRETS_FILE=str(bed_secrets_file)) as bed, logged_in_to(bed):
        ensure_queues(bed["ARMADA_URL"], ("flyte",))
        yield bed


@pytest.fixture
def client(two_clusters) -> Iterator[ArmadaClient]:
    with armada_channel(two_clusters["ARMADA_URL"]) as channel:
        yield ArmadaClient(channel)


def cluster_of(client: ArmadaClient, job_id: str) -> str:
    details = client.get_job_details([job_id])
    return details.job_details[job_id].job_runs[0].cluster


def test_architecture_places_each_job_on_the_cluster_that_has_its_nodes(client, two_clusters):
    job_set = unique("two-clusters")
    amd64 = submit_one(client, QUEUE, job_set, item(pod(python("print('amd64')"))))
    arm64 = submit_one(client, QUEUE, job_set, item(arm64_pod(python("print('arm64')"))))
    for job_id in (amd64, arm64):
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=180)
    assert (cluster_of(client, amd64), cluster_of(client, arm64)) == (OUR_CLUSTER, KUBERNETES_CLUSTER)
    assert job_pod(two_clusters, arm64)["spec"]["nodeName"].startswith("arm64-")
    assert job_pod(two_clusters, amd64) is None, "the amd64 job ran on our executor's cluster, not in Kubernetes"


def test_the_view_says_which_cluster_ran_each_job(client):
    from armada_flyte.view.jobs import job_row

    job_set = unique("two-clusters-view")
    ids = {
        arch: submit_one(client, QUEUE, job_set, item(spec))
        for arch, spec in (("amd64", pod()), ("arm64", arm64_pod()))
    }
    for job_id in ids.values():
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=180)
    request = job_pb2.JobDetailsRequest(job_ids=list(ids.values()), expand_job_spec=True, expand_job_run=True)
    details = client.job_stub.GetJobDetails(request).job_details
    rows = {arch: job_row(details[job_id]) for arch, job_id in ids.items()}
    assert {arch: row.cluster for arch, row in rows.items()} == {"amd64": OUR_CLUSTER, "arm64": KUBERNETES_CLUSTER}


def test_the_connectors_custom_info_names_the_cluster_that_ran_the_task(two_clusters):
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(armada_url=two_clusters["ARMADA_URL"], node_groups_preset="embedded", ack_timeout_seconds=60)
    connector = ArmadaConnector()

    async def scenario(arch: str):
        template = python_template(f"print('on {arch}')", ArmadaConfig(architecture=arch))
        metadata = execution_metadata(action=f"two-clusters-{arch}")
        meta = await connector.create(template, "s3://b/raw", task_execution_metadata=metadata)
        return await wait_for(connector, meta, DONE, timeout=180)

    try:
        resources = {arch: run(scenario(arch)) for arch in ("amd64", "arm64")}
    finally:
        run(connector.close())
    assert {a: r.phase for a, r in resources.items()} == {
        "amd64": TaskExecution.SUCCEEDED,
        "arm64": TaskExecution.SUCCEEDED,
    }
    assert {a: r.custom_info["cluster"] for a, r in resources.items()} == {
        "amd64": OUR_CLUSTER,
        "arm64": KUBERNETES_CLUSTER,
    }
    assert resources["arm64"].custom_info["node"].startswith("arm64-")
