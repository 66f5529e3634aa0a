"""The embedded cluster as Kubernetes objects (JSON, as the API server returns them): its nodes,
namespaces, the pods Armada's executor would have created and their Services.

A pod exists from the moment its run's pod was created (the run went pending) until Armada's
executor would delete it: at once when its job is cancelled or preempted, 3 minutes after it
succeeded, 10 minutes after it failed, and beyond the newest 1000 finished pods
(`minimumPodAge`, `failedPodExpiry`, `maxTerminatedPods` in config/executor/config.yaml).
Pods use the host's network with both executors, so their IP is 127.0.0.1.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any, Iterable

from armada_flyte.cluster.cluster_file import Cluster, Node
from armada_flyte.cluster.pod_metadata import JOB_ID_LABEL, QUEUE_LABEL, pod_annotations, pod_labels
from armada_flyte.embedded.kube_api.job_services import job_services
from armada_flyte.embedded.store.jobs import Job, Run, RunState
from armada_flyte.kube import format_milli

POD_IP = "127.0.0.1"
SUCCEEDED_POD_SECONDS = 180.0
FAILED_POD_SECONDS = 600.0
MAX_TERMINATED_PODS = 1000
KUBERNETES_VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0+armada-flyte", "platform": "linux/amd64"}
_PHASES = {
    RunState.PENDING: "Pending",
    RunState.RUNNING: "Running",
    RunState.SUCCEEDED: "Succeeded",
    RunState.FAILED: "Failed",
}
_BORN = datetime.datetime.now(datetime.timezone.utc)


def node_object(node: Node) -> dict[str, Any]:
    resources = {name: format_milli(name, amount) for name, amount in node.allocatable.items()}
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": _metadata(node.name, None, _BORN, labels=dict(node.labels)),
        "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints]},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "addresses": [{"type": "InternalIP", "address": POD_IP}, {"type": "Hostname", "address": node.name}],
            "nodeInfo": {
                "architecture": node.node_set.architecture,
                "operatingSystem": "linux",
                "kubeletVersion": KUBERNETES_VERSION["gitVersion"],
            },
        },
    }


def namespace_object(name: str) -> dict[str, Any]:
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": _metadata(name, None, _BORN, labels={"kubernetes.io/metadata.name": name}),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def nodes(cluster: Cluster) -> list[dict[str, Any]]:
    return [node_object(node) for node in cluster.nodes]


def namespaces(cluster: Cluster) -> list[dict[str, Any]]:
    return [namespace_object(name) for name in sorted(cluster.namespaces)]


def live_pods(jobs: Iterable[Job], now: float) -> list[tuple[Job, Run]]:
    """The (job, run) of every pod that would still exist at `now`, oldest first."""
    active, finished = [], []
    for job in jobs:
        run = job.latest_run
        if run is None or run.pending_at is None or run.lost or run.state not in _PHASES:
            continue
        if run.finished_at is None:
            active.append((job, run))
            continue
        keep = SUCCEEDED_POD_SECONDS if run.state == RunState.SUCCEEDED else FAILED_POD_SECONDS
        if now - run.finished_at < keep:
            finished.append((job, run))
    finished = sorted(finished, key=lambda pair: pair[1].finished_at or 0.0)[-MAX_TERMINATED_PODS:]
    return sorted([*active, *finished], key=lambda pair: pair[1].pending_at or 0.0)


def pod_object(job: Job, run: Run) -> dict[str, Any]:
    item, pod = job.item, job.pod
    phase = _PHASES[run.state]
    status: dict[str, Any] = {"phase": phase, "hostIP": POD_IP, "podIP": POD_IP, "podIPs": [{"ip": POD_IP}]}
    if run.started_at is not None:
        status["startTime"] = _time(run.started_at)
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": _metadata(
            run.pod_name,
            job.namespace,
            _at(run.pending_at or run.leased_at),
            uid=run.id,
            labels=pod_labels(item.labels, job.id, run.id, job.queue),
            annotations=pod_annotations(item.annotations, job.job_set, job.owner),
        ),
        "spec": {
            "nodeName": run.node.name,
            "restartPolicy": pod.restartPolicy or "Never",
            "priorityClassName": pod.priorityClassName,
            "serviceAccountName": pod.serviceAccountName or "default",
            "containers": [_container(c) for c in pod.containers],
            **({"initContainers": [_container(c) for c in pod.initContainers]} if pod.initContainers else {}),
        },
        "status": status,
    }


def service_objects(job: Job, run: Run) -> list[dict[str, Any]]:
    """The job's Services; they live and die with its pod (the executor makes the pod their owner)."""
    return [
        {
            "kind": "Service",
            "apiVersion": "v1",
            "metadata": _metadata(
                service.name,
                job.namespace,
                _at(run.pending_at or run.leased_at),
                labels={JOB_ID_LABEL: job.id, QUEUE_LABEL: job.queue},
                annotations=pod_annotations({}, job.job_set, job.owner),
            ),
            "spec": {
                "type": service.type,
                "clusterIP": "None" if service.headless else POD_IP,
                "selector": service.selector,
                "ports": [
                    {
                        "name": p.name,
                        "port": p.port,
                        "protocol": p.protocol,
                        "targetPort": p.port,
                        **({} if service.headless else {"nodePort": p.port}),
                    }
                    for p in service.ports
                ],
            },
            "status": {"loadBalancer": {}},
        }
        for service in job_services(job.id, job.item, job.pod)
    ]


def _container(container: Any) -> dict[str, Any]:
    return {
        "name": container.name,
        "image": container.image,
        **({"command": list(container.command)} if container.command else {}),
        **({"args": list(container.args)} if container.args else {}),
        **(
            {"ports": [{"containerPort": p.containerPort, "protocol": p.protocol or "TCP"} for p in container.ports]}
            if container.ports
            else {}
        ),
    }


def _metadata(
    name: str,
    namespace: str | None,
    created: datetime.datetime,
    *,
    uid: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "uid": uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{name}")),
        "resourceVersion": "1",
        "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    return metadata


def _at(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)


def _time(seconds: float) -> str:
    return _at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")
