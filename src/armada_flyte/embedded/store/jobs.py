"""The central record of the embedded server: jobs, their runs, and Armada's states for both.

A job is what was submitted; a run is one attempt of it on one node. States and their numbers
are Armada's (`JobState` in submit.proto, `JobRunState` in job.proto).
"""

from __future__ import annotations

import base64
import enum
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

from armada_flyte.armada_names import JobState
from armada_flyte.cluster.cluster_file import Node
from armada_flyte.embedded.model.job_request import GangInfo
from armada_flyte.embedded.model.requirements import Requirements
from armada_flyte.pod_runner.model import ContainerEnd
from armada_flyte.pod_runner.pod_log import PodLog

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_FROM_RFC4648 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _CROCKFORD.encode())


ACTIVE = frozenset({JobState.LEASED, JobState.PENDING, JobState.RUNNING})
"""The states of a job with a run that holds a node."""
GangKey = tuple[str, str, str]
"""(queue, job set, gang id): gangs are named within their job set."""


class RunState(enum.IntEnum):
    UNKNOWN = 0
    LEASED = 1
    PENDING = 2
    RUNNING = 3
    SUCCEEDED = 4
    FAILED = 5
    PREEMPTED = 6
    CANCELLED = 7
    LEASE_EXPIRED = 8
    LEASE_RETURNED = 9


RUN_STATE_OF = {
    JobState.LEASED: RunState.LEASED,
    JobState.PENDING: RunState.PENDING,
    JobState.RUNNING: RunState.RUNNING,
    JobState.SUCCEEDED: RunState.SUCCEEDED,
    JobState.FAILED: RunState.FAILED,
    JobState.PREEMPTED: RunState.PREEMPTED,
    JobState.CANCELLED: RunState.CANCELLED,
}


def new_job_id() -> str:
    """A ULID in lower-case Crockford base32, the shape of Armada's job ids (time-ordered)."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    # 26 digits of 5 bits are the low 130 bits of 160 (20 bytes, 32 digits): base32 in C, then the alphabet
    return base64.b32encode(value.to_bytes(20, "big"))[6:].translate(_FROM_RFC4648).decode()


def is_job_id(text: str) -> bool:
    """Whether `text` parses as a ULID (26 Crockford base32 characters, any case, the first at most 7)."""
    return len(text) == 26 and text[0] in "01234567" and all(c in _CROCKFORD for c in text.lower())


@dataclass(eq=False, slots=True)
class Run:
    """One attempt of a job on one node."""

    job: Job
    node: Node
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    state: RunState = RunState.LEASED
    leased_at: float = field(default_factory=time.time)
    pending_at: Optional[float] = None
    started_at: Optional[float] = None
    finished_at: Optional[float] = None
    exit_code: Optional[int] = None
    error: str = ""
    note: str = ""
    containers: tuple[ContainerEnd, ...] = ()
    """How each container ended, as the executor reported it."""
    pod_reason: str = ""
    """The pod's own failure reason (DeadlineExceeded), or ""."""
    holds_capacity: bool = True
    attempted: bool = True
    """Whether the run counts as an attempt (Armada doesn't count a lease returned before the pod started)."""
    lost: bool = False
    """The pod was lost or its lease returned: the executor's report of its end no longer counts."""
    log: PodLog = field(default_factory=PodLog)
    ingress_hosts: tuple[tuple[int, str], ...] = ()
    """(container port, host) of the pod's ingresses, reported once it ran."""

    @property
    def pod_name(self) -> str:
        return f"armada-{self.job.id}-0"


@dataclass(eq=False, slots=True)
class Job:
    """A submitted job: its request item, what it needs from a node, and what has happened to it."""

    id: str
    queue: str
    job_set: str
    seq: int
    item: Any
    pod: Any
    requirements: Requirements
    gang: Optional[GangInfo] = None
    state: JobState = JobState.QUEUED
    submitted_at: float = field(default_factory=time.time)
    last_transition: float = field(default_factory=time.time)
    runs: list[Run] = field(default_factory=list)
    error: str = ""
    cancel_reason: str = ""
    cancel_user: str = ""
    cancelled_at: Optional[float] = None
    owner: str = "anonymous"
    """Who submitted it (the authenticated user; "anonymous" without auth), as Armada records it."""
    validated: bool = False
    """A scheduling pass found that some node could ever hold it. Armada keeps this with the job (its scheduler's
    JobValidated, v0.22.7 internal/scheduler/scheduler.go) and never checks a validated job again, so a job whose
    nodes leave later stays queued; so does a restored one here."""

    @property
    def priority(self) -> float:
        return self.item.priority

    @property
    def namespace(self) -> str:
        return self.item.namespace

    @property
    def latest_run(self) -> Optional[Run]:
        return self.runs[-1] if self.runs else None

    @property
    def gang_key(self) -> Optional[GangKey]:
        return (self.queue, self.job_set, self.gang.id) if self.gang else None

    def move_to(self, state: JobState, at: float | None = None) -> None:
        self.state = state
        self.last_transition = at or time.time()
        run = self.latest_run
        if run is not None and state in RUN_STATE_OF:
            run.state = RUN_STATE_OF[state]
