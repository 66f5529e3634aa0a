"""The fields of the events a run's pod causes (pending, running, succeeded, failed, ingress info),
as Armada's executor reports them."""

from __future__ import annotations

from typing import Any

from armada_client.armada import event_pb2

from armada_flyte.cluster.error_categories import ErrorCategories
from armada_flyte.embedded.store.jobs import Run
from armada_flyte.pod_runner.model import DEADLINE_REASON, ContainerEnd, failed_containers_text


def pod_event_fields(run: Run, with_node: bool = True) -> dict[str, Any]:
    """The fields pod events (pending, running, succeeded, failed) share."""
    fields = {
        "cluster_id": run.node.executor,
        "kubernetes_id": run.id,
        "pod_number": 0,
        "pod_name": run.pod_name,
        "pod_namespace": run.job.namespace,
    }
    if with_node:
        fields["node_name"] = run.node.name
    return fields


def failure_event_fields(run: Run, exit_code: int, error: str, categories: ErrorCategories) -> dict[str, Any]:
    """A failed event's fields: every container that ended, with its exit code and reason (as Armada's
    executor reports them, `internal/executor/util/pod_status.go`), and the cause: DeadlineExceeded for
    a pod over its activeDeadlineSeconds, OOM when a container was OOMKilled, else Error. `exit_codes`
    stays empty: Armada's event conversion (internal/server/event/conversion/conversions.go) never fills it.
    The failure category is the executor's classification (`categories`), which the event carries."""
    ends = container_ends(run, exit_code, error)
    statuses = [
        event_pb2.ContainerStatus(
            name=end.name,
            exitCode=end.exit_code,
            message=end.message,
            reason=end.reason,
            cause=event_pb2.OOM if end.reason == "OOMKilled" else event_pb2.Error,
        )
        for end in ends
    ]
    if run.pod_reason == DEADLINE_REASON:
        cause = event_pb2.DeadlineExceeded
    elif any(end.reason == "OOMKilled" for end in ends):
        cause = event_pb2.OOM
    else:
        cause = event_pb2.Error
    classification = categories.classify(ends, run.pod_reason, error if run.pod_reason else "")
    return {
        **pod_event_fields(run),
        "reason": classification.with_hint(pod_failure_reason(run, exit_code, error)),
        "container_statuses": statuses,
        "cause": cause,
        **classification.event_fields(),
    }


def pod_failure_reason(run: Run, exit_code: int, error: str) -> str:
    """Armada's `ExtractPodFailedReason` (internal/executor/util/pod_status.go): the pod's own message
    when it has one (e.g. past its deadline), else a line per container that exited non-zero. Lines
    of the executor's error that the containers' messages don't carry (a hint how to fix it) follow."""
    if run.pod_reason:
        return error
    reason = failed_containers_text(container_ends(run, exit_code, error))
    extra = [line for line in error.splitlines() if line.strip() and line not in reason]
    return reason + "".join(f"{line}\n" for line in extra) if reason else error


def container_ends(run: Run, exit_code: int, error: str) -> tuple[ContainerEnd, ...]:
    if run.containers or run.pod_reason:
        return tuple(run.containers)
    return (ContainerEnd(run.job.pod.containers[0].name, exit_code, "Error", error),)
