"""What the control plane's parts share: one lock, the job store, and the scheduler's view of waiting jobs.

Commands, the run lifecycle and the scheduling loop each change jobs; they do it under this one
lock and record every change as an event. A change that may let something be scheduled sets
`wake`, which the scheduling loop waits on.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from armada_flyte.armada_names import JobState
from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.embedded.scheduling.scheduler import Backlog, Scheduler
from armada_flyte.embedded.store.event_log import EventLog
from armada_flyte.embedded.store.job_index import JobIndex
from armada_flyte.embedded.store.jobs import GangKey, Job
from armada_flyte.embedded.store.persistence import StateStore
from armada_flyte.embedded.store.queues import QueueRegistry


@dataclass
class PlaneState:
    cluster: Cluster
    store: StateStore
    lock: threading.RLock
    events: EventLog
    queues: QueueRegistry
    scheduler: Scheduler
    index: JobIndex = field(default_factory=JobIndex)
    backlogs: dict[str, Backlog] = field(default_factory=dict)
    """Each queue's jobs waiting for a node, in the order the scheduler takes them."""
    unchecked_jobs: list[Job] = field(default_factory=list)
    """Jobs not in a gang that no scheduling pass has yet asked "could this ever fit?"."""
    unchecked_gangs: dict[GangKey, None] = field(default_factory=dict)
    """Gangs to check at the next pass (an ordered set)."""
    wake: threading.Event = field(default_factory=threading.Event)

    def track(self, job: Job) -> None:
        """Index the job and, if it waits, put it in its queue's backlog and on the list to check."""
        self.index.add(job)
        if job.state.terminal:
            return
        if job.gang_key is not None:  # members with a run too: a returned lease puts them back in the queue
            self.unchecked_gangs[job.gang_key] = None
        if job.state == JobState.QUEUED:
            self.backlog(job.queue).add(job)
            if job.gang_key is None and not job.validated:
                self.unchecked_jobs.append(job)

    def backlog(self, queue: str) -> Backlog:
        return self.backlogs.setdefault(queue, Backlog())
