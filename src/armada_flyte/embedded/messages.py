"""How the server's records look on the wire: Armada's protobuf messages, built in one place."""

from __future__ import annotations

from typing import Any, Optional

from armada_client.armada import event_pb2, job_pb2, submit_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from armada_flyte.embedded.error_categories import ErrorCategories
from armada_flyte.embedded.events import EventRecord
from armada_flyte.embedded.jobs import Job, Run
from armada_flyte.embedded.records import EVENT_TYPES
from armada_flyte.pod_runner.model import DEADLINE_REASON, ContainerEnd

NOTE_ANNOTATION = "armada-flyte.dev/note"
"""Annotation GetJobDetails(expand_job_spec) adds to say what the executor really did (e.g. ran natively)."""


def timestamp(at: Optional[float]) -> Optional[Timestamp]:
    if at is None:
        return None
    stamp = Timestamp()
    stamp.FromNanoseconds(int(at * 1e9))
    return stamp


def job_message(job: Job) -> submit_pb2.Job:
    item = job.item
    annotations = dict(item.annotations)
    run = job.latest_run
    if run is not None and run.note:
        annotations[NOTE_ANNOTATION] = run.note
    message = submit_pb2.Job(
        id=job.id,
        client_id=item.client_id,
        job_set_id=job.job_set,
        queue=job.queue,
        namespace=item.namespace,
        labels=dict(item.labels),
        annotations=annotations,
        priority=item.priority,
        created=timestamp(job.submitted_at),
        scheduler=item.scheduler,
    )
    if item.HasField("pod_spec"):
        message.pod_spec.CopyFrom(item.pod_spec)
    else:
        message.pod_specs.extend(item.pod_specs)
    return message


def event_message(message_id: str, record: EventRecord) -> event_pb2.EventStreamMessage:
    job = record.job
    fields = dict(record.fields)
    if record.kind == "submitted":
        fields["job"] = job_message(job)
    event = EVENT_TYPES[record.kind](
        job_id=job.id, job_set_id=job.job_set, queue=job.queue, created=timestamp(record.created), **fields
    )
    return event_pb2.EventStreamMessage(id=message_id, message=event_pb2.EventMessage(**{record.kind: event}))


def run_details(run: Run) -> job_pb2.JobRunDetails:
    return job_pb2.JobRunDetails(
        run_id=run.id,
        job_id=run.job.id,
        state=int(run.state),
        cluster=run.node.executor,
        node=run.node.name,
        leased_ts=timestamp(run.leased_at),
        pending_ts=timestamp(run.pending_at),
        started_ts=timestamp(run.started_at),
        finished_ts=timestamp(run.finished_at),
    )


def job_details(job: Job, expand_spec: bool, expand_runs: bool) -> job_pb2.JobDetails:
    run = job.latest_run
    return job_pb2.JobDetails(
        job_id=job.id,
        queue=job.queue,
        jobset=job.job_set,
        namespace=job.namespace,
        state=int(job.state),
        submitted_ts=timestamp(job.submitted_at),
        cancel_ts=timestamp(job.cancelled_at),
        cancel_reason=job.cancel_reason,
        cancel_user=job.cancel_user,
        last_transition_ts=timestamp(job.last_transition),
        latest_run_id=run.id if run else "",
        job_spec=job_message(job) if expand_spec else None,
        job_runs=[run_details(r) for r in reversed(job.runs)] if expand_runs else [],  # newest first (query.sql)
    )


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
    failed = [end for end in container_ends(run, exit_code, error) if end.exit_code != 0]
    reason = "".join(
        f"Container {e.name} failed with exit code {e.exit_code} because {e.reason}: {e.message}\n" for e in failed
    )
    extra = [line for line in error.splitlines() if line.strip() and line not in reason]
    return reason + "".join(f"{line}\n" for line in extra) if reason else error


def container_ends(run: Run, exit_code: int, error: str) -> tuple[ContainerEnd, ...]:
    if run.containers or run.pod_reason:
        return tuple(run.containers)
    return (ContainerEnd(run.job.pod.containers[0].name, exit_code, "Error", error),)
