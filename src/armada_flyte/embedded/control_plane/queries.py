"""The control plane's queries: jobs, runs and reports as the Jobs, Binoculars and reporting APIs read them.

A new job is visible to the query side only `visibility_delay` seconds after it was submitted,
as Armada's query API sees a job once its ingester has stored it.
"""

from __future__ import annotations

import threading
import time
from typing import Iterable, Optional

from armada_flyte.armada_names import JobState
from armada_flyte.embedded.control_plane.plane_state import PlaneState
from armada_flyte.embedded.scheduling import reports
from armada_flyte.embedded.store.jobs import ACTIVE, Job, Run


class Queries:
    def __init__(self, state: PlaneState, visibility_delay: float):
        self._state = state
        self._visibility_delay = visibility_delay

    def all_jobs(self) -> list[Job]:
        """Every job the server knows, in submission order (a copy of the list, for read-only views)."""
        with self._state.lock:
            return list(self._state.index.jobs.values())

    def find_job(self, job_id: str) -> Optional[Job]:
        """The job, ingested or not (for callers beside the server, not the Jobs API)."""
        return self._state.index.jobs.get(job_id)

    def visible_job(self, job_id: str) -> Optional[Job]:
        """The job, once the query side would have ingested it (after `visibility_delay`), else None."""
        job = self._state.index.jobs.get(job_id)
        if job is None or time.time() - job.submitted_at < self._visibility_delay:
            return None
        return job

    def states(self, job_ids: Iterable[str]) -> dict[str, int]:
        """Without the lock, so status reads never wait on a scheduling pass: a job's state is one
        attribute, replaced whole, so each read sees a state the job really had. (`visible_job`'s rule,
        with the clock read once: this runs on the server's event loop.)"""
        jobs, unknown = self._state.index.jobs, int(JobState.UNKNOWN)
        if self._visibility_delay <= 0:
            return {i: int(job.state) if (job := jobs.get(i)) is not None else unknown for i in job_ids}
        now = time.time()
        return {
            i: int(job.state)
            if (job := jobs.get(i)) is not None and now - job.submitted_at >= self._visibility_delay
            else unknown
            for i in job_ids
        }

    def errors(self, job_ids: Iterable[str]) -> dict[str, str]:
        with self._state.lock:
            return {i: _error_of(job) for i in job_ids if (job := self.visible_job(i))}

    def jobs(self, job_ids: Iterable[str]) -> list[Job]:
        with self._state.lock:
            return [job for i in job_ids if (job := self.visible_job(i))]

    def runs(self, run_ids: Iterable[str]) -> list[Run]:
        with self._state.lock:
            runs = self._state.index.runs
            return [runs[i] for i in run_ids if i in runs]

    def job_by_external_uri(self, queue: str, job_set: str, uri: str) -> Optional[Job]:
        with self._state.lock:
            job_id = self._state.index.job_with_external_uri(queue, job_set, uri)
            return self.visible_job(job_id) if job_id else None

    def job_report(self, job_id: str) -> str:
        """Armada's GetJobReport text: why the job (if visible and queued) is not scheduled yet."""
        with self._state.lock:
            return reports.job_report(self._state.cluster, self._state.scheduler.free, job_id, self.visible_job(job_id))

    def queue_report(self, queue: str) -> str:
        """Armada's GetQueueReport text: what the queue holds and how many of its jobs wait."""
        with self._state.lock:
            backlog = self._state.backlogs.get(queue)
            waiting = [job for job in backlog.ordered() if job.state == JobState.QUEUED] if backlog else []
            usage = dict(self._state.scheduler.usage.get(queue, {}))
            return reports.queue_report(self._state.cluster, queue, usage, waiting)

    def round_report(self) -> str:
        """Armada's GetSchedulingReport text (unfiltered): the queues now holding resources."""
        with self._state.lock:
            holding = sorted(queue for queue, used in self._state.scheduler.usage.items() if any(used.values()))
            return f"{self._state.cluster.pool}:\n\tMost recent scheduling round:\n\t\tScheduled queues: {holding}\n"

    def active_queues(self) -> dict[str, list[str]]:
        """Jobs.GetActiveQueues: per pool, the queues with leased, pending or running jobs
        (`GetActiveQueuesByPool` in internal/server/queryapi/database/query.sql)."""
        with self._state.lock:
            queues = sorted({job.queue for job in self._state.index.jobs.values() if job.state in ACTIVE})
        return {self._state.cluster.pool: queues} if queues else {}

    def lock(self) -> threading.RLock:
        """Hold it to read several jobs consistently (e.g. while building messages from them)."""
        return self._state.lock


def _error_of(job: Job) -> str:
    """Armada's rule: the job's own error, else its latest run's."""
    run = job.latest_run
    return job.error or (run.error if run else "")
