"""How the server's records are written down: jobs, their runs, events and pod logs as rows.

The store (`persistence`) keeps these rows; this module turns the in-memory records into them and back,
and knows nothing of where they are kept.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from armada_client.armada import event_pb2, submit_pb2

from armada_flyte.armada_names import JobState
from armada_flyte.cluster.cluster_file import Cluster, Node
from armada_flyte.embedded.model.job_request import gang_info, main_pod_spec
from armada_flyte.embedded.model.requirements import Requirements
from armada_flyte.embedded.store.jobs import Job, Run, RunState
from armada_flyte.pod_runner.model import ContainerEnd
from armada_flyte.pod_runner.pod_log import LogLine, PodLog

EVENT_TYPES = {
    "submitted": event_pb2.JobSubmittedEvent,
    "queued": event_pb2.JobQueuedEvent,
    "leased": event_pb2.JobLeasedEvent,
    "pending": event_pb2.JobPendingEvent,
    "running": event_pb2.JobRunningEvent,
    "succeeded": event_pb2.JobSucceededEvent,
    "failed": event_pb2.JobFailedEvent,
    "cancelling": event_pb2.JobCancellingEvent,
    "cancelled": event_pb2.JobCancelledEvent,
    "preempting": event_pb2.JobPreemptingEvent,
    "preempted": event_pb2.JobPreemptedEvent,
    "reprioritizing": event_pb2.JobReprioritizingEvent,
    "reprioritized": event_pb2.JobReprioritizedEvent,
    "lease_returned": event_pb2.JobLeaseReturnedEvent,
    "ingress_info": event_pb2.JobIngressInfoEvent,
}
"""Each event kind (the field name in Armada's `EventMessage` oneof) and its message type."""


@dataclass(frozen=True)
class JobRow:
    id: str
    seq: int
    queue: str
    job_set: str
    state: int
    last_transition: float
    item: bytes
    """The stored request item (server defaults applied), written once."""
    record: str
    """JSON of what changes: state, times, errors, priority and the runs."""


@dataclass(frozen=True)
class EventRow:
    queue: str
    job_set: str
    ms: int
    seq: int
    subseq: int
    last: bool
    kind: str
    job_id: str
    created: float
    fields: bytes
    """The extra fields, encoded by `EventFieldsEncoder` as the event's message type."""


_JOB_FIELDS = ("submitted_at", "last_transition", "error", "cancel_reason", "cancel_user", "cancelled_at", "owner")
"""A job's plain fields, stored and read back as they are."""
_RUN_FIELDS = (
    "leased_at",
    "pending_at",
    "started_at",
    "finished_at",
    "exit_code",
    "error",
    "note",
    "pod_reason",
    "attempted",
    "lost",
)
"""A run's plain fields, stored and read back as they are."""


def item_bytes(job: Job) -> bytes:
    return job.item.SerializeToString()


def job_row(job: Job, item: bytes) -> JobRow:
    record = {
        "state": int(job.state),
        **{name: getattr(job, name) for name in _JOB_FIELDS},
        "priority": job.item.priority,
        "validated": job.validated,
        "runs": [_run_record(run) for run in job.runs],
    }
    return JobRow(
        job.id, job.seq, job.queue, job.job_set, int(job.state), job.last_transition, item, json.dumps(record)
    )


def _run_record(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "node": run.node.name,
        "state": int(run.state),
        **{name: getattr(run, name) for name in _RUN_FIELDS},
        "containers": [[c.name, c.exit_code, c.reason, c.message] for c in run.containers],
    }


def job_from_row(row: JobRow, cluster: Cluster, log_loader: Callable[[str], list[LogLine]]) -> Job:
    """The job as it was saved; its runs' logs are read from the store when first asked for."""
    record = json.loads(row.record)
    item = submit_pb2.JobSubmitRequestItem()
    item.ParseFromString(row.item)
    item.priority = record["priority"]
    pod = main_pod_spec(item)
    job = Job(
        row.id,
        row.queue,
        row.job_set,
        row.seq,
        item,
        pod,
        Requirements.of_pod(pod),
        gang_info(item.annotations),
        state=JobState(record["state"]),
        validated=record.get("validated", False),  # a state saved before it was kept: checked again
        **{name: record[name] for name in _JOB_FIELDS},
    )
    nodes = {node.name: node for node in cluster.nodes}
    job.runs = [_run_from_record(job, r, nodes, cluster, log_loader) for r in record["runs"]]
    return job


def _run_from_record(
    job: Job,
    record: Mapping[str, Any],
    nodes: Mapping[str, Node],
    cluster: Cluster,
    log_loader: Callable[[str], list[LogLine]],
) -> Run:
    run_id = record["id"]
    run = Run(
        job,
        nodes.get(record["node"]) or _gone_node(record["node"], cluster),
        id=run_id,
        state=RunState(record["state"]),
        **{name: record[name] for name in _RUN_FIELDS},
        containers=tuple(ContainerEnd(*c) for c in record["containers"]),
        holds_capacity=False,
        log=PodLog.stored(lambda: log_loader(run_id)),
    )
    return run


def _gone_node(name: str, cluster: Cluster) -> Node:
    """A node the cluster file no longer has: kept by name for the record, never placed on."""
    template = cluster.nodes[0]
    return Node(-1, name, template.node_set, {}, (), {}, template.executor)


class EventFieldsEncoder:
    """An event's extra fields as bytes of its message type; the many events with the same plain fields
    (every `leased` event names the same cluster and pool) are encoded once."""

    def __init__(self) -> None:
        self._known: dict[tuple, bytes] = {}

    def encode(self, kind: str, fields: Mapping[str, Any]) -> bytes:
        if not fields:
            return b""
        plain = all(isinstance(v, (str, int, float, bool)) for v in fields.values())
        key = (kind, *sorted(fields.items())) if plain else None
        if key is not None and (known := self._known.get(key)) is not None:
            return known
        data = EVENT_TYPES[kind](**fields).SerializeToString()
        if key is not None and len(self._known) < 10_000:
            self._known[key] = data
        return data


def event_fields(kind: str, data: bytes) -> dict[str, Any]:
    """The saved extra fields of an event, as keyword arguments for its message type again."""
    if not data:
        return {}
    message = EVENT_TYPES[kind]()
    message.ParseFromString(data)
    return {field.name: value for field, value in message.ListFields()}


def log_data(lines: list[LogLine]) -> bytes:
    return zlib.compress(json.dumps([[line.at_us, line.stream, line.text] for line in lines]).encode())


def log_lines(data: Optional[bytes]) -> list[LogLine]:
    if not data:
        return []
    return [LogLine(at_us, stream, text) for at_us, stream, text in json.loads(zlib.decompress(data))]
