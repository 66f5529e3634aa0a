"""A run the scheduler leased, turned into the pod the pod runner starts.

Real Armada's executor builds the pod from the lease (internal/executor/util/kubernetes_object.go):
named `armada-<job id>-0`, in the job's namespace, with the job's labels and annotations plus
Armada's own, and Armada's variables in every container. Kubernetes then puts it on the one node
its nodeSelector names: the scheduler adds `<nodeIdLabel>: <node name>` to every leased pod
(internal/scheduler/api.go), so the node is real Armada's decision, not ours. A lease that can't
become a pod is refused: returned (Armada leases it again, elsewhere) when no node of this
executor matches, failed when Kubernetes would refuse the pod for good (a missing namespace,
Armada's `fatalPodSubmissionErrors`), when a Secret it references is missing (the kubelet would
keep its container waiting until Armada's pending-pod check gave up), or the lease carries no pod.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, Optional

from armada_flyte.cluster.cluster_file import Cluster, Node
from armada_flyte.cluster.pod_metadata import injected_env, pod_annotations, pod_labels
from armada_flyte.cluster.secrets import WAITING_REASON, SecretStore, SecretUnavailable, resolve_pod_secrets
from armada_flyte.pod_runner import PodLaunch, PodLog

POD_NAME_PREFIX = "armada-"
POOL_ANNOTATION = "armadaproject.io/pool"
"""The pool the scheduler placed the run in, annotated on every leased job (constants.PoolAnnotation)."""
NO_POD_SPEC = "no podspec found in the main object - jobs must specify a podspec"


@dataclass(frozen=True)
class LeasedRun:
    """What every event about a run names: the run, its job, where its events go, and its pod."""

    run_id: str
    job_id: str
    queue: str
    job_set: str
    executor_id: str
    pool: str
    pod_name: str
    namespace: str
    node: str = ""
    """The node the pod runs on ("" until it has one)."""


class Refusal(enum.Enum):
    RETURNED = "returned"
    """No node of this executor fits: the lease goes back to Armada, which leases the job again."""
    POD_REFUSED = "pod refused"
    """Kubernetes would refuse the pod for good: the run fails."""
    UNREADABLE = "unreadable"
    """The lease carries no pod: the run fails."""


class LeaseRefused(Exception):
    """The lease can't become a pod on this executor."""

    def __init__(self, run: LeasedRun, message: str, refusal: Refusal):
        self.run = run
        self.message = message
        self.refusal = refusal
        super().__init__(message)


def leased_run(lease: Any, executor_id: str) -> LeasedRun:
    job = lease.job
    return LeasedRun(
        run_id=lease.job_run_id,
        job_id=job.job_id,
        queue=lease.queue,
        job_set=lease.jobset,
        executor_id=executor_id,
        pool=job.objectMeta.annotations.get(POOL_ANNOTATION, ""),
        pod_name=f"{POD_NAME_PREFIX}{job.job_id}-0",
        namespace=job.objectMeta.namespace,
    )


def node_for(pod: Any, cluster: Cluster) -> Node | None:
    """The node the pod's nodeSelector names, as Kubernetes would bind it: the first whose labels match
    every entry (the scheduler's node id entry leaves one)."""
    selector = dict(pod.nodeSelector)
    return next((n for n in cluster.nodes if all(n.labels.get(k) == v for k, v in selector.items())), None)


def pod_launch(lease: Any, cluster: Cluster, secrets: Optional[SecretStore] = None) -> tuple[LeasedRun, PodLaunch]:
    """The run and the pod to launch for `lease`, its Secret references resolved from `secrets` (none
    when None: every reference is then missing), or LeaseRefused."""
    run = leased_run(lease, cluster.executor)
    job = lease.job
    if not job.mainObject.HasField("pod_spec"):
        raise LeaseRefused(run, NO_POD_SPEC, Refusal.UNREADABLE)
    pod = job.mainObject.pod_spec.pod_spec
    if not cluster.has_namespace(run.namespace):
        raise LeaseRefused(run, f'namespaces "{run.namespace}" not found', Refusal.POD_REFUSED)
    node = node_for(pod, cluster)
    if node is None:
        selector = ", ".join(f"{k}={v}" for k, v in sorted(pod.nodeSelector.items())) or "none"
        message = f"no node of executor {cluster.executor} matches the pod's nodeSelector ({selector})"
        raise LeaseRefused(run, message, Refusal.RETURNED)
    try:
        resolved = resolve_pod_secrets(pod, secrets or SecretStore(), run.namespace)
    except SecretUnavailable as exc:
        container = pod.containers[0].name if pod.containers else ""
        message = f"Unable to start pod.\nContainer {container} is in state Waiting with reason {WAITING_REASON}: {exc}"
        raise LeaseRefused(dataclasses.replace(run, node=node.name), message, Refusal.POD_REFUSED) from None
    placed = dataclasses.replace(run, node=node.name)
    meta = job.objectMeta
    launch = PodLaunch(
        run_id=run.run_id,
        job_id=run.job_id,
        pod_name=run.pod_name,
        namespace=run.namespace,
        node=node.name,
        node_set=node.node_set.name,
        architecture=node.node_set.architecture,
        pod=pod,
        log=PodLog(),
        labels=pod_labels(meta.labels, run.job_id, run.run_id, run.queue),
        annotations=pod_annotations(meta.annotations, run.job_set, lease.user),
        injected_env=injected_env(run.job_id, run.queue, run.job_set, meta.annotations),
        secrets=resolved,
    )
    return placed, launch
