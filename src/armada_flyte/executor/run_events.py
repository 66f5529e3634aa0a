"""The events real Armada's executor reports about a run, built from what the pod runner says.

Read from Armada's executor (internal/executor/reporter/event.go, util/pod_status.go,
job/processors/preempt_runs.go, service/cluster_allocation.go): a pending pod is
`jobRunAssigned`, a running one `jobRunRunning` with its node, a pod that ended well
`jobRunSucceeded`; a failed pod is a terminal `jobRunErrors` whose pod error carries the text
"Container X failed with exit code N because R: msg" (or the pod's own message), every ended
container, the Kubernetes reason (OOM, DeadlineExceeded, else AppError) and the failure category
of the executor's rules; a preempted run is `jobRunPreempted` followed by a pod error "Run
preempted"; a lease the executor gives back is a pod-lease-returned error. A cancelled run gets
no event from the executor: the scheduler has already recorded it. `leased` is the scheduler's.
"""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from armada_flyte.cluster.error_categories import INTERNAL, ErrorCategories
from armada_flyte.executor.leases import LeasedRun
from armada_flyte.executor.stubs import events_pb2
from armada_flyte.pod_runner import ContainerEnd, PodEnd, failed_containers_text

OOM_KILLED = "OOMKilled"
POD_REASONS = {"Evicted": events_pb2.Evicted, "DeadlineExceeded": events_pb2.DeadlineExceeded}
"""Pod status reasons with a Kubernetes reason of their own (util.ExtractPodFailureCause)."""
RUN_PREEMPTED = "Run preempted"
JOB_CREATION_FAILED = "job-creation-failed"
"""The subcategory of a lease the executor could not turn into a pod (errormatch.SubcategoryJobCreationFailed)."""


def sequence(run: LeasedRun, *events: events_pb2.EventSequence.Event) -> events_pb2.EventSequence:
    return events_pb2.EventSequence(queue=run.queue, job_set_name=run.job_set, events=list(events))


def event(**kind: object) -> events_pb2.EventSequence.Event:
    created = Timestamp()
    created.GetCurrentTime()
    return events_pb2.EventSequence.Event(created=created, **kind)


def pod_meta(run: LeasedRun) -> events_pb2.ObjectMeta:
    """The pod as events name it; its Kubernetes uid is the run id, as the pod runner's `metadata.uid`."""
    return events_pb2.ObjectMeta(
        executor_id=run.executor_id, namespace=run.namespace, name=run.pod_name, kubernetes_id=run.run_id
    )


def resource_info(run: LeasedRun, with_node: bool = True) -> events_pb2.KubernetesResourceInfo:
    node = run.node if with_node else ""
    return events_pb2.KubernetesResourceInfo(
        objectMeta=pod_meta(run), podInfo=events_pb2.PodInfo(node_name=node, pod_number=0)
    )


def assigned(run: LeasedRun) -> events_pb2.EventSequence:
    """The pod is pending on its node (Armada's executor names no node here, as Kubernetes' pending pod)."""
    info = resource_info(run, with_node=False)
    kind = events_pb2.JobRunAssigned(run_id=run.run_id, job_id=run.job_id, pool=run.pool, resourceInfos=[info])
    return sequence(run, event(jobRunAssigned=kind))


def running(run: LeasedRun) -> events_pb2.EventSequence:
    kind = events_pb2.JobRunRunning(
        run_id=run.run_id, job_id=run.job_id, pool=run.pool, resourceInfos=[resource_info(run)]
    )
    return sequence(run, event(jobRunRunning=kind))


def succeeded(run: LeasedRun) -> events_pb2.EventSequence:
    kind = events_pb2.JobRunSucceeded(run_id=run.run_id, job_id=run.job_id, resourceInfos=[resource_info(run)])
    return sequence(run, event(jobRunSucceeded=kind))


def failure_message(end: PodEnd) -> str:
    """Armada's `ExtractPodFailedReason`: the pod's own message when it has a reason (past its deadline,
    evicted), else a line per container that exited non-zero; the runner's error when neither says more
    (it could not start the pod)."""
    if end.reason:
        return end.error
    return failed_containers_text(end.containers) or end.error


def kubernetes_reason(end: PodEnd) -> int:
    if end.reason in POD_REASONS:
        return POD_REASONS[end.reason]
    return events_pb2.OOM if any(c.reason == OOM_KILLED for c in end.containers) else events_pb2.AppError


def container_error(run: LeasedRun, end: ContainerEnd) -> events_pb2.ContainerError:
    return events_pb2.ContainerError(
        objectMeta=events_pb2.ObjectMeta(executor_id=run.executor_id, namespace=run.namespace, name=end.name),
        exit_code=end.exit_code,
        message=end.message,
        reason=end.reason,
        kubernetes_reason=events_pb2.OOM if end.reason == OOM_KILLED else events_pb2.AppError,
    )


def failed(run: LeasedRun, end: PodEnd, categories: ErrorCategories) -> events_pb2.EventSequence:
    """The pod ended with a non-zero exit code or a pod-level reason."""
    classification = categories.classify(end.containers, end.reason, end.error if end.reason else "")
    pod_error = events_pb2.PodError(
        objectMeta=pod_meta(run),
        message=classification.with_hint(failure_message(end)),
        node_name=run.node,
        pod_number=0,
        containerErrors=[container_error(run, c) for c in end.containers],
        kubernetes_reason=kubernetes_reason(end),
    )
    error = events_pb2.Error(terminal=True, podError=pod_error, **classification.event_fields())
    return sequence(
        run, event(jobRunErrors=events_pb2.JobRunErrors(run_id=run.run_id, job_id=run.job_id, errors=[error]))
    )


def ended_well(end: PodEnd) -> bool:
    """Whether the pod's phase is Succeeded: every container exited 0 and nothing ended the pod."""
    return end.exit_code == 0 and not end.reason


def ended(run: LeasedRun, end: PodEnd, categories: ErrorCategories) -> events_pb2.EventSequence:
    """`succeeded` or `failed`, as the pod's phase would be."""
    return succeeded(run) if ended_well(end) else failed(run, end, categories)


def not_created(run: LeasedRun, message: str, unreadable: bool) -> events_pb2.EventSequence:
    """A lease that can't become a pod, for good: a pod error with only the message (no node, no containers).
    Armada's executor files a lease it could not read under internal/job-creation-failed; a pod
    Kubernetes refused (a missing namespace) gets no category."""
    meta = events_pb2.ObjectMeta(executor_id=run.executor_id) if unreadable else pod_meta(run)
    pod_error = events_pb2.PodError(objectMeta=meta, message=message, kubernetes_reason=events_pb2.AppError)
    category = {"failure_category": INTERNAL, "failure_subcategory": JOB_CREATION_FAILED} if unreadable else {}
    error = events_pb2.Error(terminal=True, podError=pod_error, **category)
    return sequence(
        run, event(jobRunErrors=events_pb2.JobRunErrors(run_id=run.run_id, job_id=run.job_id, errors=[error]))
    )


def preempted(run: LeasedRun) -> events_pb2.EventSequence:
    """The scheduler asked for the run to be preempted: `jobRunPreempted`, then its pod error."""
    preemption = events_pb2.JobRunPreempted(preempted_job_id=run.job_id, preempted_run_id=run.run_id)
    pod_error = events_pb2.PodError(
        objectMeta=pod_meta(run), message=RUN_PREEMPTED, node_name=run.node, kubernetes_reason=events_pb2.AppError
    )
    errors = events_pb2.JobRunErrors(
        run_id=run.run_id, job_id=run.job_id, errors=[events_pb2.Error(terminal=True, podError=pod_error)]
    )
    return sequence(run, event(jobRunPreempted=preemption), event(jobRunErrors=errors))


def lease_returned(run: LeasedRun, message: str, run_attempted: bool) -> events_pb2.EventSequence:
    """The executor gives the run back: Armada leases the job again (up to its attempts), here or elsewhere."""
    returned = events_pb2.PodLeaseReturned(
        objectMeta=pod_meta(run), message=message, pod_number=0, run_attempted=run_attempted
    )
    error = events_pb2.Error(terminal=True, podLeaseReturned=returned)
    return sequence(
        run, event(jobRunErrors=events_pb2.JobRunErrors(run_id=run.run_id, job_id=run.job_id, errors=[error]))
    )
