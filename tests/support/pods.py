"""Pod specs and request items for the conformance suite, built from armada_client's protos as a client would.

The commands are plain `python3 -c` programs, so the same specs run on a real cluster (in
ARMADA_TEST_IMAGE, default python:3.11-slim) and under the embedded process pod runner.
"""

from __future__ import annotations

import os
import uuid
from typing import Iterable, Mapping, Optional

from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

IMAGE = os.environ.get("ARMADA_TEST_IMAGE", "python:3.11-slim")
NAMESPACE = os.environ.get("ARMADA_TEST_NAMESPACE", "default")
ARCH = "kubernetes.io/arch"
ARM64_TOLERATION = core.Toleration(key=ARCH, operator="Equal", value="arm64", effect="NoSchedule")
GANG_ID = "armadaproject.io/gangId"
GANG_CARDINALITY = "armadaproject.io/gangCardinality"
GANG_UNIFORMITY = "armadaproject.io/gangNodeUniformityLabel"


def resources(
    cpu: str = "100m", memory: str = "64Mi", limits: Optional[Mapping[str, str]] = None
) -> core.ResourceRequirements:
    """Requests with equal limits (Armada refuses oversubscription) unless `limits` says otherwise."""
    requests = {"cpu": cpu, "memory": memory}
    limits = requests if limits is None else limits
    return core.ResourceRequirements(
        requests={k: resource.Quantity(string=v) for k, v in requests.items()},
        limits={k: resource.Quantity(string=v) for k, v in limits.items()},
    )


def python(code: str) -> list[str]:
    return ["python3", "-c", code]


def pod(
    command: Iterable[str] = ("true",),
    *,
    cpu: str = "100m",
    memory: str = "64Mi",
    args: Iterable[str] = (),
    env: Optional[Mapping[str, str]] = None,
    working_dir: str = "",
    node_selector: Optional[Mapping[str, str]] = None,
    tolerations: Iterable[core.Toleration] = (),
    affinity: Optional[core.Affinity] = None,
    grace_seconds: Optional[int] = None,
    container_resources: Optional[core.ResourceRequirements] = None,
) -> core.PodSpec:
    container = core.Container(
        name="main",
        image=IMAGE,
        command=list(command),
        args=list(args),
        env=[core.EnvVar(name=k, value=v) for k, v in (env or {}).items()],
        workingDir=working_dir,
        resources=container_resources or resources(cpu, memory),
    )
    spec = core.PodSpec(
        containers=[container],
        restartPolicy="Never",
        nodeSelector=dict(node_selector or {}),
        tolerations=list(tolerations),
    )
    if affinity is not None:
        spec.affinity.CopyFrom(affinity)
    if grace_seconds is not None:
        spec.terminationGracePeriodSeconds = grace_seconds
    return spec


def preemptible(spec: core.PodSpec) -> core.PodSpec:
    """The pod in Armada's preemptible priority class: only such jobs are preempted (scheduler/scheduler.go)."""
    spec.priorityClassName = "armada-preemptible"
    return spec


def arm64_pod(command: Iterable[str] = ("true",), **kwargs) -> core.PodSpec:
    """A pod pinned to arm64 with the toleration the arm64 group's taint needs."""
    return pod(command, node_selector={ARCH: "arm64"}, tolerations=[ARM64_TOLERATION], **kwargs)


def required_affinity(key: str, operator: str, values: Iterable[str] = ()) -> core.Affinity:
    expression = core.NodeSelectorRequirement(key=key, operator=operator, values=list(values))
    selector = core.NodeSelector(nodeSelectorTerms=[core.NodeSelectorTerm(matchExpressions=[expression])])
    return core.Affinity(nodeAffinity=core.NodeAffinity(requiredDuringSchedulingIgnoredDuringExecution=selector))


def item(
    spec: core.PodSpec,
    *,
    priority: float = 1.0,
    client_id: str = "",
    namespace: str = NAMESPACE,
    annotations: Optional[Mapping[str, str]] = None,
) -> submit_pb2.JobSubmitRequestItem:
    return submit_pb2.JobSubmitRequestItem(
        priority=priority,
        namespace=namespace,
        client_id=client_id,
        annotations=dict(annotations or {}),
        pod_specs=[spec],
    )


def gang(gang_id: str, cardinality: int, uniformity_label: str = "") -> dict[str, str]:
    annotations = {GANG_ID: gang_id, GANG_CARDINALITY: str(cardinality)}
    if uniformity_label:
        annotations[GANG_UNIFORMITY] = uniformity_label
    return annotations


def submit_one(client: ArmadaClient, queue: str, job_set: str, request_item: submit_pb2.JobSubmitRequestItem) -> str:
    return client.submit_jobs(queue, job_set, [request_item]).job_response_items[0].job_id


def submit_many(client: ArmadaClient, queue: str, job_set: str, spec: core.PodSpec, count: int) -> list[str]:
    """`count` jobs running `spec`, in requests of 100; their ids in order."""
    ids: list[str] = []
    for start in range(0, count, 100):
        items = [item(spec) for _ in range(min(100, count - start))]
        ids += [i.job_id for i in client.submit_jobs(queue, job_set, items).job_response_items]
    return ids


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def cluster(*groups: dict) -> dict:
    """A cluster file's content, for servers of a test's own."""
    return {"node_sets": list(groups)}


def node_set(name: str, nodes: int = 1, cpu: str = "1", arch: str = "amd64", tainted: bool = False) -> dict:
    taints = [{"key": ARCH, "value": arch, "effect": "NoSchedule"}] if tainted else []
    return {
        "name": name,
        "nodes": nodes,
        "labels": {ARCH: arch},
        "taints": taints,
        "allocatable": {"cpu": cpu, "memory": "4Gi"},
    }


def sleeper(cpu: str = "1", **kwargs) -> core.PodSpec:
    """A pod that runs until cancelled, holding `cpu`."""
    return pod(python("import time; time.sleep(300)"), cpu=cpu, **kwargs)


def runs_until_file_exists(path: str, cpu: str = "1") -> core.PodSpec:
    """A pod that holds `cpu` until the test creates `path`, then exits 0."""
    code = f"import os, time\nwhile not os.path.exists({path!r}): time.sleep(0.02)"
    return pod(python(code), cpu=cpu)


def with_secret_volume(spec: core.PodSpec, secret: str, mount_path: str, items=(), optional=False) -> core.PodSpec:
    """`spec` with the Secret `secret` as the volume `creds`, read-only at `mount_path` in its first container."""
    source = core.SecretVolumeSource(secretName=secret, items=[core.KeyToPath(key=k, path=p) for k, p in items])
    if optional:
        source.optional = True
    spec.volumes.append(core.Volume(name="creds", volumeSource=core.VolumeSource(secret=source)))
    spec.containers[0].volumeMounts.append(core.VolumeMount(name="creds", mountPath=mount_path, readOnly=True))
    return spec
