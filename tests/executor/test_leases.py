"""A lease becomes the pod real Armada's executor would create, on the node the scheduler chose."""

from __future__ import annotations

import pytest

from support.executor_parts import lease, require_executor_stubs

require_executor_stubs()

pytestmark = pytest.mark.pure

from armada_client.k8s.io.api.core.v1 import generated_pb2 as core  # noqa: E402

from armada_flyte.cluster.cluster_file import Cluster  # noqa: E402
from armada_flyte.cluster.secrets import SecretStore  # noqa: E402
from armada_flyte.executor.leases import LeaseRefused, Refusal, pod_launch  # noqa: E402

HOSTNAME = "kubernetes.io/hostname"


def pod_on(node: str, **selector: str) -> core.PodSpec:
    """A pod as leased: the scheduler has added its node id label (kubernetes.io/hostname) to the selector."""
    return core.PodSpec(
        containers=[core.Container(name="main", image="python:3.11-slim", command=["true"])],
        nodeSelector={HOSTNAME: node, **selector},
    )


def test_the_pod_goes_to_the_node_the_scheduler_chose():
    run, launch = pod_launch(lease(pod_on("arm64-1", **{"kubernetes.io/arch": "arm64"})), Cluster.default())
    assert (launch.node, launch.node_set, launch.architecture) == ("arm64-1", "arm64", "arm64")
    assert run.node == "arm64-1"


def test_the_pod_is_named_and_labelled_as_armadas_executor_does():
    leased = lease(
        pod_on("amd64-0"),
        job_id="01abc",
        run_id="r-7",
        queue="team",
        job_set="nightly",
        labels={"app": "x"},
        annotations={"armadaproject.io/pool": "default", "note": "y"},
    )
    run, launch = pod_launch(leased, Cluster.default())
    assert (launch.pod_name, launch.namespace, launch.run_id, launch.job_id) == (
        "armada-01abc-0",
        "default",
        "r-7",
        "01abc",
    )
    assert launch.labels["app"] == "x"
    assert (launch.labels["armada_job_id"], launch.labels["armada_job_run_id"], launch.labels["armada_queue_id"]) == (
        "01abc",
        "r-7",
        "team",
    )
    assert (launch.annotations["armada_jobset_id"], launch.annotations["armada_owner"]) == ("nightly", "alice")
    assert launch.injected_env == {"ARMADA_JOB_ID": "01abc", "ARMADA_QUEUE": "team", "ARMADA_JOB_SET_ID": "nightly"}
    assert (run.queue, run.job_set, run.pool, run.executor_id) == (
        "team",
        "nightly",
        "default",
        Cluster.default().executor,
    )


def test_a_lease_no_node_matches_is_given_back():
    with pytest.raises(LeaseRefused) as refused:
        pod_launch(lease(pod_on("elsewhere-3")), Cluster.default())
    assert refused.value.refusal is Refusal.RETURNED
    assert "kubernetes.io/hostname=elsewhere-3" in refused.value.message


def test_a_pod_in_a_missing_namespace_fails_as_kubernetes_refuses_it():
    with pytest.raises(LeaseRefused) as refused:
        pod_launch(lease(pod_on("amd64-0"), namespace="nowhere"), Cluster.default())
    assert refused.value.refusal is Refusal.POD_REFUSED
    assert refused.value.message == 'namespaces "nowhere" not found'


def test_a_lease_without_a_pod_spec_fails():
    with pytest.raises(LeaseRefused) as refused:
        pod_launch(lease(None), Cluster.default())
    assert refused.value.refusal is Refusal.UNREADABLE
    assert refused.value.run.run_id == "run-1"


def pod_reading_secret(name: str, key: str) -> core.PodSpec:
    pod = pod_on("amd64-0")
    ref = core.SecretKeySelector(localObjectReference=core.LocalObjectReference(name=name), key=key)
    pod.containers[0].env.append(core.EnvVar(name="TOKEN", valueFrom=core.EnvVarSource(secretKeyRef=ref)))
    return pod


def test_a_pods_secret_reference_is_resolved_from_the_executors_secrets():
    secrets = SecretStore()
    secrets.put("api", {"token": "s3cr3t"})
    _, launch = pod_launch(lease(pod_reading_secret("api", "token")), Cluster.default(), secrets)
    assert launch.secrets.of("main").env == {"TOKEN": "s3cr3t"}


def test_a_pod_whose_secret_is_missing_fails_without_starting_saying_which():
    with pytest.raises(LeaseRefused) as refused:
        pod_launch(lease(pod_reading_secret("absent", "token")), Cluster.default(), SecretStore())
    assert refused.value.refusal is Refusal.POD_REFUSED
    assert refused.value.message == (
        "Unable to start pod.\nContainer main is in state Waiting with reason CreateContainerConfigError: "
        'secret "absent" not found'
    )
    assert refused.value.run.node == "amd64-0"
