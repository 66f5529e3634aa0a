"""A poll's I/O: each fact the decision asks for, fetched where it is cheapest.

A job's state comes from the status view (memory, or a bulk GetJobStatus shared with other polls), and
with it what the job set's events said of its run; a run's details and Armada's reason come from those
events when they cover the state, else from calls shared with other polls (GetJobDetails, GetJobErrors);
a0's error file from the blob store, within a time bound; the scheduler's report from the last one kept,
while fresh enough; a later step's job from its submit (once per process: remembered here); a gang's jobs,
and whether the next step's job was submitted before a step's job ended, from the status view (its job set's
stream, or a read of the job set's events shared per refresh period).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Optional, Sequence

from armada_flyte.armada_names import TERMINAL_STATES
from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.armada.submit_items import client_id_of
from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.run_details import RunDetails
from armada_flyte.connector.poll.decision import Fact, Fetch, JobFacts, Known
from armada_flyte.connector.poll.error_file import ErrorFileUnreadable, read_task_error
from armada_flyte.connector.poll.job_set_streams import RunFacts
from armada_flyte.connector.poll.phases import state_name
from armada_flyte.connector.poll.queued_report import QueuedReports
from armada_flyte.connector.poll.status_view import StatusView
from armada_flyte.errors import ArmadaFlyteError

log = logging.getLogger(__name__)

MAX_REMEMBERED_STEP_JOBS = 10_000
"""Later steps' job ids kept in the process (least recently asked dropped first)."""
MAX_REMEMBERED_REASONS = 10_000
"""Ended jobs' reasons kept in the process: a preference's polls read the reason of each step it moved on from
at once on every walk (a rejection's is not in the events), and an ended job's reason never changes."""


class FactFinder:
    """Fetches facts for polls through one connector's API client and status view; keeps the scheduler's
    last report per job and the ids of the later steps' jobs it submitted (soft state, bounded)."""

    def __init__(
        self, api: ArmadaApi, view: StatusView, blob: BlobSettings, error_read_timeout: float, node_groups: NodeGroups
    ) -> None:
        self._api = api
        self._view = view
        self._blob = blob
        self._error_read_timeout = error_read_timeout
        self._node_groups = node_groups
        self._reports = QueuedReports()
        self._step_jobs: OrderedDict[tuple[str, str, int, str], str] = OrderedDict()
        self._reasons: OrderedDict[str, str] = OrderedDict()

    async def fetch(self, known: Known, fetches: Sequence[Fetch]) -> Known:
        """`known` with each fetched fact, fetched in order."""
        for fetch in fetches:
            known = await self._fetch(known, fetch)
        return known

    def forget(self, job_id: str) -> None:
        """A job ended: its report is of no more use."""
        self._reports.forget(job_id)

    async def _fetch(self, known: Known, fetch: Fetch) -> Known:
        meta, step = known.meta, fetch.step
        if fetch.fact is Fact.JOB:
            return known.learnt(step, JobFacts(await self._step_job(known, step, fetch.gang_size)))
        job = known.jobs[step]
        job_id, state, run = job.job_id, job.state, job.run
        known_run = run if run is not None and state is not None and run.covers(state) else None
        if fetch.fact is Fact.STATE:
            state = await self._view.state_of(job_id, meta.queue, meta.job_set_id)
            job = replace(job, state=state, run=self._view.run_facts(job_id))
        elif fetch.fact is Fact.EVENTS:
            job = replace(job, events_read=True)
            try:
                found = await self._view.events_of(job_id, meta.queue, meta.job_set_id)
            except ArmadaFlyteError as exc:
                job = replace(job, events_unreadable=str(exc))
            else:
                if found is not None:
                    job = replace(job, state=found[0], run=found[1], from_events=True)
        elif fetch.fact is Fact.DETAILS:
            if known_run is not None and state is not None:
                details = _details_of(known_run, state)
            else:
                details = await self._api.run_details_of(job_id)
            job = replace(job, details_read=True, details=details)
        elif fetch.fact is Fact.ERROR_FILE:
            job = replace(job, error_read=True)
            try:
                error = await read_task_error(meta.outputs_path, self._error_read_timeout, self._blob)
            except ErrorFileUnreadable as exc:
                job = replace(job, error_unreadable=str(exc))
            else:
                job = replace(job, task_error=error)
        elif fetch.fact is Fact.REASON:
            given = known_run.reason if known_run is not None else None
            job = replace(job, reason=given if given is not None else await self._reason_of(job_id, state))
        elif fetch.fact is Fact.REPORT:
            group = known.steps[step].node_group
            report = await self._reports.report_for(
                self._api, job_id, meta.queue, group, self._node_groups, fetch.max_age
            )
            job = replace(job, report=report)
        elif fetch.fact is Fact.GANG:
            gang_id = meta.for_step(known.steps[step], job_id).gang_id
            try:
                members = await self._view.gang_members(meta.queue, meta.job_set_id, gang_id)
            except ArmadaFlyteError as exc:  # no sibling known to have failed: the next poll reads again
                log.debug("job %s: the events of gang %s could not be read: %s", job_id, gang_id, exc)
                members = ()
            job = replace(job, gang=members)
        elif fetch.fact is Fact.NEXT:
            job = replace(job, **await self._next_job(known, step))
        return known.learnt(step, job)

    async def _next_job(self, known: Known, step: int) -> dict[str, Any]:
        """`next_job` and `end_in_events` of a step's job: the next step's job if this process submitted it while
        the step's job was queued (a move at once), else as the job set's events order them. Unreadable events
        tell nothing: the decision asks again (a cancelled step is held, bounded)."""
        meta, job = known.meta, known.jobs[step]
        if job.state not in TERMINAL_STATES and (meta.queue, meta.job_set_id, step + 1, meta.job_id) in self._step_jobs:
            return {"next_job": self._step_jobs[(meta.queue, meta.job_set_id, step + 1, meta.job_id)]}
        client_id = client_id_of(known.steps[step + 1].item)
        ended = job.state in TERMINAL_STATES
        try:
            found, in_events = await self._view.submitted_before_end(
                meta.queue, meta.job_set_id, client_id, job.job_id, ended
            )
        except ArmadaFlyteError as exc:
            log.debug("job %s: the events of job set %s could not be read: %s", job.job_id, meta.job_set_id, exc)
            return {"next_job": "", "end_in_events": False}
        return {"next_job": found, "end_in_events": in_events}

    async def _reason_of(self, job_id: str, state: Optional[int]) -> str:
        """Armada's error for the job (GetJobErrors), remembered once the job ended with one (bounded)."""
        reason = self._reasons.get(job_id)
        if reason is None:
            reason = await self._api.error_of(job_id)
            if not reason or state not in TERMINAL_STATES:
                return reason
            self._reasons[job_id] = reason
            while len(self._reasons) > MAX_REMEMBERED_REASONS:
                self._reasons.popitem(last=False)
        self._reasons.move_to_end(job_id)
        return reason

    async def _step_job(self, known: Known, step: int, gang_size: int) -> str:
        """The id of a later step's job: submitted once (its client id makes a second submit, by this or
        another replica, return the same job), remembered here so later polls skip the call. `gang_size`: the
        gang cardinality to submit it with, when it differs from create's (0: as create built it)."""
        meta = known.meta
        key = (meta.queue, meta.job_set_id, step, meta.job_id)
        job_id = self._step_jobs.get(key)
        if job_id is None:
            item = known.steps[step].item
            job_id = await self._api.submit_item_bytes(meta.queue, meta.job_set_id, item, gang_size)
            log.info("task %s moved on to %s as Armada job %s", meta.task, known.steps[step].architecture, job_id)
            self._step_jobs[key] = job_id
            while len(self._step_jobs) > MAX_REMEMBERED_STEP_JOBS:
                self._step_jobs.popitem(last=False)
        self._step_jobs.move_to_end(key)
        return job_id


def _details_of(run: RunFacts, state: int) -> RunDetails:
    """The run details GetJobDetails would give, from what the job set's events said."""
    return RunDetails(run.node, run.cluster, state_name(state), run.finished_at, run.started_at)
