"""Every job the server knows, findable the ways Armada's API asks for them.

By id, by job set, by run id, by client id (a resubmitted client id gets the stored job back), by
external job URI, and the gangs whose members are not yet ended. Equal `Requirements` are shared,
so the scheduler's caches keyed by them stay small. The index holds no lock: the control plane
calls it under its own.
"""

from __future__ import annotations

from typing import Iterable, Optional

from armada_flyte.embedded.model.job_request import EXTERNAL_JOB_URI
from armada_flyte.embedded.model.requirements import Requirements
from armada_flyte.embedded.store.jobs import ACTIVE, GangKey, Job, Run


class JobIndex:
    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        """By id, in submission order."""
        self.runs: dict[str, Run] = {}
        self.gangs: dict[GangKey, list[Job]] = {}
        """The members of each gang that were live when last looked at (the scheduler prunes ended ones)."""
        self._job_sets: dict[tuple[str, str], list[Job]] = {}
        self._by_client_id: dict[tuple[str, str], str] = {}
        self._by_external_uri: dict[tuple[str, str, str], str] = {}
        self._requirements: dict[Requirements, Requirements] = {}

    def add(self, job: Job) -> None:
        """Make the job findable by id, job set, client id, external URI and its runs' ids."""
        item = job.item
        job.requirements = self._requirements.setdefault(job.requirements, job.requirements)  # equal ones share
        self.jobs[job.id] = job
        self._job_sets.setdefault((job.queue, job.job_set), []).append(job)
        if item.client_id:
            self._by_client_id[(job.queue, item.client_id)] = job.id
        uri = item.external_job_uri or item.annotations.get(EXTERNAL_JOB_URI, "")
        if uri:
            self._by_external_uri[(job.queue, job.job_set, uri)] = job.id
        for run in job.runs:
            self.runs[run.id] = run
        if job.gang_key is not None and not job.state.terminal:
            self.gangs.setdefault(job.gang_key, []).append(job)

    def job_with_client_id(self, queue: str, client_id: str) -> Optional[str]:
        return self._by_client_id.get((queue, client_id))

    def job_with_external_uri(self, queue: str, job_set: str, uri: str) -> Optional[str]:
        return self._by_external_uri.get((queue, job_set, uri))

    def select(self, queue: str, job_set: str, job_ids: Iterable[str]) -> list[Job]:
        """The job set's jobs with those ids (ids of other job sets are left out); no ids: all of them."""
        job_ids = list(job_ids)
        if not job_ids:
            return list(self._job_sets.get((queue, job_set), ()))
        jobs = (self.jobs.get(i) for i in job_ids)
        return [j for j in jobs if j is not None and j.queue == queue and j.job_set == job_set]

    def on_node(self, node: str, executor: str, queues: Iterable[str], priority_classes: Iterable[str]) -> list[Job]:
        """Active jobs of `queues` whose latest run is on `node` of `executor`, of those priority classes if given."""
        wanted_queues, classes = set(queues), set(priority_classes)
        return [
            job
            for job in self.jobs.values()
            if job.state in ACTIVE
            and job.queue in wanted_queues
            and (run := job.latest_run) is not None
            and run.node.name == node
            and run.node.executor == executor
            and (not classes or job.pod.priorityClassName in classes)
        ]
