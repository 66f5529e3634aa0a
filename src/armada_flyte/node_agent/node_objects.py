"""The cluster file's nodes as a kubelet registers them with the API server: the Node, its status, its Lease.

Each node carries its group's labels (with `kubernetes.io/arch`), `kubernetes.io/hostname` and
`kubernetes.io/os`, its group's taints (and no other: the spec's list replaces whatever admission added),
capacity and allocatable resources, a Ready condition, an InternalIP of 127.0.0.1 and the kubelet endpoint's
port, where the API server reads container logs. One agent serves every node: they share that endpoint.
Pure: the agent sends these.
"""

from __future__ import annotations

import datetime
from typing import Any

from armada_flyte.cluster.cluster_file import Node

NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
"""A kubelet's default node lease duration (nodeLeaseDurationSeconds)."""
MAX_PODS = 110
"""A kubelet's default maxPods: a node's pods capacity unless its group's allocatable names `pods`."""
AGENT_VERSION = "armada-flyte-node-agent"
OS_LABEL = "kubernetes.io/os"


def rfc3339(at: datetime.datetime) -> str:
    """Kubernetes' time format for conditions and container states (whole seconds, UTC)."""
    return at.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(at: datetime.datetime) -> str:
    """Kubernetes' MicroTime, as a Lease's renewTime takes it."""
    return at.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def quantity_text(milli: int) -> str:
    """An amount in thousandths as a Kubernetes quantity: whole units when it has no fraction."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def node_object(node: Node) -> dict[str, Any]:
    """The Node to create: metadata and spec (the status goes through its own subresource)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": node_labels(node)},
        "spec": node_spec(node),
    }


def node_labels(node: Node) -> dict[str, str]:
    return {OS_LABEL: "linux", **node.labels}


def node_spec(node: Node) -> dict[str, Any]:
    """The spec the node keeps: its group's taints only (merge-patched, the list replaces the API server's), and
    schedulable."""
    taints = [
        {k: v for k, v in {"key": t.key, "value": t.value, "effect": t.effect}.items() if v} for t in node.taints
    ] or None
    return {"taints": taints, "unschedulable": False}


def node_status(node: Node, kubelet_port: int, now: datetime.datetime, started: datetime.datetime) -> dict[str, Any]:
    """The status a kubelet reports: resources, Ready (and no pressure), addresses, its endpoint, its software."""
    resources = {name: quantity_text(amount) for name, amount in node.allocatable.items()}
    resources.setdefault("pods", str(MAX_PODS))  # the cluster file's `pods`, as a kubelet's --max-pods
    heartbeat, since = rfc3339(now), rfc3339(started)

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": since,
        }

    return {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "the node agent has memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "the node agent has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "the node agent has PIDs available"),
            condition("Ready", "True", "KubeletReady", "the armada-flyte node agent is posting ready status"),
        ],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": node.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
        "nodeInfo": {
            "architecture": node.node_set.architecture,
            "operatingSystem": "linux",
            "kubeletVersion": AGENT_VERSION,
            "kubeProxyVersion": "",
            "containerRuntimeVersion": AGENT_VERSION,
            "kernelVersion": "",
            "osImage": "",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


def node_lease(node: Node, now: datetime.datetime) -> dict[str, Any]:
    """The node's heartbeat Lease in kube-node-lease, renewed every few seconds."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": node.name, "namespace": NODE_LEASE_NAMESPACE},
        "spec": {"holderIdentity": node.name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": micro_time(now)},
    }
