"""How the server's jobs, runs and events look on the wire: the Jobs and Event APIs' protobuf messages."""

from __future__ import annotations

from typing import Optional

from armada_client.armada import event_pb2, job_pb2, submit_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from armada_flyte.embedded.model.job_request import main_pod_spec
from armada_flyte.embedded.store.event_log import EventRecord
from armada_flyte.embedded.store.jobs import Job, Run
from armada_flyte.embedded.store.rows import EVENT_TYPES

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
    # Real Armada keeps one pod per job and returns it in `pod_spec`, whichever field the submit used.
    message.pod_spec.CopyFrom(main_pod_spec(item))
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
