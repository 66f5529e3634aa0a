"""The cluster file's nodes as Armada's executor API describes them, and the lease request that carries them.

Real Armada's executor reads its nodes from Kubernetes and reports each with its (tracked)
labels, taints and allocatable resources, plus the runs on it by state
(internal/executor/utilisation/cluster_utilisation.go). Ours reads them from a cluster file and
reports every label, so the scheduler can place by `kubernetes.io/arch` and by
`kubernetes.io/hostname` (its default node id label). The v0.22.7 scheduler schedules against a
node's total resources minus the runs it has placed there itself; the deprecated available
resources are sent equal to the total, and no resources are set aside for non-Armada pods
(there are none).
"""

from __future__ import annotations

from typing import Mapping

from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource_pb2

from armada_flyte.cluster.cluster_file import Cluster, Node
from armada_flyte.executor.stubs import executorapi_pb2

DEFAULT_MAX_JOBS_TO_LEASE = 100
"""Armada's executor's default `maxLeasedJobs`: the most new runs one lease request asks for."""


def quantity(milli: int) -> resource_pb2.Quantity:
    """An amount in thousandths as a Kubernetes quantity: whole units when it has no fraction."""
    return resource_pb2.Quantity(string=str(milli // 1000) if milli % 1000 == 0 else f"{milli}m")


def node_info(node: Node, pool: str, runs: Mapping[str, int]) -> executorapi_pb2.NodeInfo:
    """One node, with `runs` (run id -> api.JobState) the runs this executor holds on it."""
    resources = {name: quantity(amount) for name, amount in node.allocatable.items()}
    return executorapi_pb2.NodeInfo(
        name=node.name,
        taints=[core_v1.Taint(key=t.key, value=t.value, effect=t.effect) for t in node.taints],
        labels=dict(node.labels),
        allocatable_resources=resources,
        available_resources=resources,
        total_resources=resources,
        run_ids_by_state=dict(runs),
        node_type=node.node_set.name,
        pool=pool,
    )


def lease_request(
    cluster: Cluster,
    runs_by_node: Mapping[str, Mapping[str, int]],
    unassigned_run_ids: tuple[str, ...] = (),
    max_jobs_to_lease: int = DEFAULT_MAX_JOBS_TO_LEASE,
) -> executorapi_pb2.LeaseRequest:
    """What the executor tells the scheduler each cycle: who it is, its nodes and the runs it holds."""
    return executorapi_pb2.LeaseRequest(
        executor_id=cluster.executor,
        pool=cluster.pool,
        resources={name: quantity(amount) for name, amount in cluster.total.items()},
        nodes=[node_info(node, cluster.pool, runs_by_node.get(node.name, {})) for node in cluster.nodes],
        max_jobs_to_lease=max_jobs_to_lease,
        unassigned_job_run_ids=list(unassigned_run_ids),
    )
