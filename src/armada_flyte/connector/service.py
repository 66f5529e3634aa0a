"""The `armada` connector: Flyte's create/get/delete, as Armada submit/poll/cancel.

Stateless across calls: everything about a job lives in `ArmadaJobMetadata`, which Flyte
persists and hands back. Loaded by `c0` through the `flyte.connectors` entry point, and used
in-process by local runs.

Over 400 lines on purpose: create, get, delete and logs share one per-settings context (API client,
status view, call batches, the cache of ended jobs), and each is only the I/O around a pure decision
kept elsewhere (`outcome.py`, `placement.py`, `preference.py`).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Optional

from flyte.connectors import AsyncConnector, ConnectorRegistry, Resource
from flyteidl2.connector.connector_pb2 import GetTaskLogsResponse, GetTaskLogsResponseBody
from flyteidl2.core.execution_pb2 import TaskLog
from flyteidl2.logs.dataplane import payload_pb2

from armada_flyte.armada_names import TERMINAL_STATES, JobState
from armada_flyte.connector import preference
from armada_flyte.connector import settings as settings_module
from armada_flyte.connector.armada_api import ArmadaApi, RunDetails, submit_item
from armada_flyte.connector.blob import BlobSettings, ErrorFileUnreadable, read_task_error
from armada_flyte.connector.execution_context import ExecutionContext
from armada_flyte.connector.gangs import GangArchitectures
from armada_flyte.connector.image_check import ImagePlatformCheck
from armada_flyte.connector.job_set_streams import RunFacts
from armada_flyte.connector.metadata import ArmadaJobMetadata
from armada_flyte.connector.node_groups import NodeGroups
from armada_flyte.connector.outcome import (
    ERROR_FILE_STATES,
    JobOutcome,
    Observed,
    Rules,
    needs_events_check,
    needs_queued_report,
    needs_reason,
    needs_run_details,
    outcome_of,
    queued_report_max_age,
    refused,
)
from armada_flyte.connector.phases import state_name
from armada_flyte.connector.plan import plan_job
from armada_flyte.connector.pod import RunIdentity
from armada_flyte.connector.preference import encoded_steps
from armada_flyte.connector.queued_report import QueuedReport, QueuedReports
from armada_flyte.connector.settings import ConnectorConfig
from armada_flyte.connector.status_view import StatusView
from armada_flyte.errors import (
    ArchitectureConflict,
    ArchitectureNotOffered,
    ArmadaFlyteError,
    ImagePlatformMismatch,
    InvalidConfig,
    SubmissionRefused,
)
from armada_flyte.spec import TASK_TYPE

log = logging.getLogger(__name__)

PERMANENT_CREATE_ERRORS = (
    InvalidConfig,
    ArchitectureNotOffered,
    ArchitectureConflict,
    ImagePlatformMismatch,
    SubmissionRefused,
)
"""Create errors no retry can fix. Through `c0` any create error reaches the backend as a
retryable failure (Flyte's webapi `launcher.go` retries every CreateTask error, whatever its gRPC
code), so `create` turns these into metadata whose first `get` reports a permanent FAILED."""

MAX_REMEMBERED_PHASES = 10_000
"""Tasks whose last reported phase is kept in the process (least recently polled dropped first)."""


@dataclass(frozen=True)
class ConnectorContext:
    """What the connector works with, built from one resolution of the settings and closed together."""

    settings: ConnectorConfig
    api: ArmadaApi
    view: StatusView
    node_groups: NodeGroups


class ArmadaConnector(AsyncConnector[ArmadaJobMetadata]):
    """Submits Flyte tasks as Armada jobs, polls them, and cancels them."""

    name = "Armada Connector"
    task_type_name = TASK_TYPE
    metadata_type = ArmadaJobMetadata

    def __init__(self, settings: Optional[ConnectorConfig] = None) -> None:
        """With `settings`, the connector uses them for good; without (as `c0` loads it), it resolves them
        from `configure`, the environment and the settings file, and again after each `configure`."""
        self._settings = settings
        self._generation = -1
        self._current: Optional[ConnectorContext] = None
        self._image_check: Optional[ImagePlatformCheck] = None
        self._gangs = GangArchitectures()
        self._queued_reports = QueuedReports()
        self._phases: OrderedDict[str, int] = OrderedDict()
        self._step_jobs: OrderedDict[tuple[str, str, int, str], str] = OrderedDict()
        self._spill_cancels = preference.SpillCancels()

    # ---- settings, resolved lazily and again after `configure` ----
    async def context(self) -> ConnectorContext:
        """The current settings, client and status view; rebuilt (closing the old ones) after `configure`."""
        generation = settings_module.generation() if self._settings is None else 0
        if self._current is None or generation != self._generation:
            settings = self._settings or settings_module.resolve_settings()
            node_groups = settings.node_groups()
            fresh = ConnectorContext(settings, ArmadaApi(settings), StatusView(settings), node_groups)
            stale, self._current, self._generation = self._current, fresh, generation
            if stale is not None:
                await self._close(stale)
        return self._current

    async def close(self) -> None:
        """Close the client, the status view (its thread and channels) and the image check; the next call reopens."""
        stale, self._current = self._current, None
        if stale is not None:
            await self._close(stale)

    async def _close(self, stale: ConnectorContext) -> None:
        stale.view.close()
        await stale.api.close()
        check, self._image_check = self._image_check, None
        if check is not None:
            check.close()

    async def create(
        self,
        task_template: Any,
        output_prefix: str,
        inputs: Optional[dict[str, Any]] = None,
        task_execution_metadata: Any = None,
        **kwargs: Any,
    ) -> ArmadaJobMetadata:
        """Flyte's create (what `c0` calls): `submit`, with refusals no retry can fix returned as
        metadata that `get` reports as a permanent failure, since the backend retries every
        CreateTask error (see PERMANENT_CREATE_ERRORS). Transient errors still raise."""
        try:
            return await self.submit(task_template, output_prefix, inputs, task_execution_metadata)
        except PERMANENT_CREATE_ERRORS as exc:
            task = task_template.id.name
            log.warning("refused %s for good, without submitting: %s: %s", task, type(exc).__name__, exc)
            return ArmadaJobMetadata(
                task=task, submitted_at=time.time(), refusal_code=type(exc).__name__, refusal=str(exc)[:4000]
            )

    async def submit(
        self,
        task_template: Any,
        output_prefix: str,
        inputs: Optional[dict[str, Any]] = None,
        task_execution_metadata: Any = None,
        *,
        attempt: Optional[int] = None,
    ) -> ArmadaJobMetadata:
        """Plan and submit the task's job; every refusal raises its typed error (local runs). `attempt`:
        a local run's attempt number (a backend's metadata carries its own)."""
        current = await self.context()
        settings, api = current.settings, current.api
        identity = _identity(task_template, task_execution_metadata)
        if attempt is not None:
            identity = replace(identity, attempt=attempt)
        extra_env = dict(task_execution_metadata.environment_variables) if task_execution_metadata else None

        def make_plan(image_in_registry: Any = None) -> Any:
            return plan_job(
                task_template,
                current.node_groups,
                identity,
                output_prefix,
                BlobSettings.from_settings(settings.blob),
                extra_env,
                secret_env_prefix=settings.placement.secret_env_var_prefix,
                context=ExecutionContext.of(task_execution_metadata, task_template),
                namespace_template=settings.placement.namespace_template,
                image_in_registry=image_in_registry,
            )

        plan = make_plan()
        architecture = plan.placement.architecture
        if settings.images.check_image_platforms and (plan.resolved.any_of or plan.resolved.preference):
            # `any` or a preference: the registry narrows the architectures (and refuses an image with none offered).
            in_registry = await self._image_checker(settings).architectures(plan.template.image, identity.task)
            if in_registry is not None:
                plan = make_plan(in_registry)
                architecture = plan.placement.architecture
        elif settings.images.check_image_platforms and architecture is not None:
            await self._image_checker(settings).check(plan.template.image, architecture, identity.task)
        job, queue = plan.job, plan.spec.queue
        if job.gang_id:
            claimed = plan.architecture or f"any of {plan.any_of}"
            self._gangs.claim(queue, job.gang_id, job.client_id, claimed, identity.task)
        try:
            job_id = await api.submit_one(queue, plan.job_set_id, job)
        except BaseException:
            if job.gang_id:
                self._gangs.release(queue, job.gang_id, job.client_id)
            raise
        current.view.follow(queue, plan.job_set_id)
        log.info(
            "submitted %s as Armada job %s (queue %s, %s)",
            identity.task,
            job_id,
            queue,
            architecture or (f"any of {plan.any_of}" if plan.any_of else "any arch"),
        )
        return ArmadaJobMetadata(
            job_id=job_id,
            job_set_id=plan.job_set_id,
            queue=queue,
            namespace=plan.job.namespace,
            outputs_path=job.outputs_path,
            architecture=plan.architecture,
            architecture_source=plan.resolved.source,
            node_group=plan.placement.node_group or "",
            image=plan.template.image,
            any_of=plan.any_of,
            submitted_at=time.time(),
            task=identity.task,
            timeout_seconds=plan.template.timeout_seconds,
            queued_timeout_seconds=plan.template.queued_timeout_seconds or plan.template.timeout_seconds,
            gang_id=job.gang_id or "",
            gang_cardinality=(plan.spec.gang_cardinality or 0) if job.gang_id else 0,
            spill_after_seconds=plan.spill_after,
            spill_jobs=encoded_steps([(s, submit_item(s.job).SerializeToString()) for s in plan.spill_jobs])
            if plan.spill_jobs
            else "",
        )

    def _image_checker(self, settings: ConnectorConfig) -> ImagePlatformCheck:
        if self._image_check is None:
            self._image_check = ImagePlatformCheck(settings.images)
        return self._image_check

    async def poll(self, meta: ArmadaJobMetadata) -> JobOutcome:
        """The answer for the task's current job: for an architecture preference, the job of the step it has
        reached (spilling it to the next architecture when it waits for room past `spill_after`)."""
        if not meta.spill_jobs or meta.refusal_code or not meta.job_id:
            return await self._poll_job(meta)
        current = await self.context()
        steps = preference.steps_of(meta)
        step, job_id = await self._current_step(current, meta, steps)
        job_meta = preference.step_meta(meta, step, job_id)
        now = time.time()
        state = await current.view.state_of(job_id, meta.queue, meta.job_set_id)
        due = preference.spill_due(meta, step, len(steps) - 1, state, now)
        outcome = await self._poll_job(job_meta, report_wanted=due)
        message = preference.spilled_message(steps, step, meta)
        if due and preference.waits_for_room(outcome.report) and outcome.state == JobState.QUEUED:
            message = preference.spilling_message(steps, step, meta)
            if self._spill_cancels.due(job_id, now):
                log.info("job %s: %s", job_id, message)
                await current.api.cancel_job_set(meta.queue, meta.job_set_id, preference.SPILL_REASON, queued_only=True)
        facts = {**outcome.facts, **preference.spill_info(steps, step, meta)}
        return replace(outcome, message=f"{message}; {outcome.message}" if message else outcome.message, facts=facts)

    async def _current_step(
        self, current: ConnectorContext, meta: ArmadaJobMetadata, steps: list[preference.Step]
    ) -> tuple[preference.Step, str]:
        """The step the task has reached, and its job's id: past every step whose job was spilled."""
        step, job_id = steps[0], meta.job_id
        while step.index < len(steps) - 1:
            state = await current.view.state_of(job_id, meta.queue, meta.job_set_id)
            if state != JobState.CANCELLED:
                break
            details = await self._details(current, job_id)
            if not preference.was_spilled(meta, step, state, details, time.time()):
                break
            step = steps[step.index + 1]
            job_id = await self._step_job(current, meta, step)
        return step, job_id

    async def _details(self, current: ConnectorContext, job_id: str) -> Optional[RunDetails]:
        run = current.view.run_facts(job_id)
        if run is not None and run.covers(JobState.CANCELLED):
            return _details_of(run, JobState.CANCELLED)
        return await current.api.run_details_of(job_id)

    async def _step_job(self, current: ConnectorContext, meta: ArmadaJobMetadata, step: preference.Step) -> str:
        """The id of the step's job: submitted once (its client id makes a second submit, by this or another
        replica, return the same job), remembered here so later polls skip the call."""
        key = (meta.queue, meta.job_set_id, step.index, meta.job_id)
        job_id = self._step_jobs.get(key)
        if job_id is None:
            job_id = await current.api.submit_item_bytes(meta.queue, meta.job_set_id, step.item)
            log.info("task %s spilled to %s as Armada job %s", meta.task, step.architecture, job_id)
            self._step_jobs[key] = job_id
            while len(self._step_jobs) > MAX_REMEMBERED_PHASES:
                self._step_jobs.popitem(last=False)
        self._step_jobs.move_to_end(key)
        return job_id

    async def _poll_job(self, meta: ArmadaJobMetadata, *, report_wanted: bool = False) -> JobOutcome:
        """Gather what the answer depends on (Armada's state, run details, a0's error.pb, Armada's reason,
        the scheduler's report); `outcome_of` decides, and a job over its time limit is cancelled.

        The state, the run's node and times, its exit codes and its failure reason come from the status
        view's events when it has them; what they lack is asked for in calls shared with other polls."""
        if meta.refusal_code or not meta.job_id:
            return refused(meta)
        current = await self.context()
        timeouts, api = current.settings.timeouts, current.api
        state = await current.view.state_of(meta.job_id, meta.queue, meta.job_set_id)
        now = time.time()
        run = current.view.run_facts(meta.job_id)
        from_events, events_unreadable = False, ""
        if needs_events_check(meta, state, now, timeouts.ack_timeout_seconds):
            try:
                found = await current.view.events_of(meta.job_id, meta.queue, meta.job_set_id)
            except ArmadaFlyteError as exc:
                events_unreadable = str(exc)
            else:
                if found is not None:
                    (state, run), from_events = found, True
        report = None
        if needs_queued_report(meta, state, now, timeouts.queued_report_after_seconds) or (
            report_wanted and state == JobState.QUEUED
        ):
            report = await self._queued_report(current, meta, now)
        known = run if run is not None and run.covers(state) else None
        details = None
        if needs_run_details(meta, state):
            details = _details_of(known, state) if known else await api.run_details_of(meta.job_id)
        task_error, unreadable = None, ""
        if state in ERROR_FILE_STATES:
            blob = BlobSettings.from_settings(current.settings.blob)
            try:
                task_error = await read_task_error(meta.outputs_path, timeouts.error_read_timeout_seconds, blob)
            except ErrorFileUnreadable as exc:
                unreadable = str(exc)
        reason = ""
        if needs_reason(state, task_error, unreadable):
            reason = known.reason if known and known.reason is not None else await api.error_of(meta.job_id)
        exit_codes = dict(known.exit_codes) if known else {}
        previous = self._phases.get(meta.job_id)
        seen = Observed(state, now, details, task_error, unreadable, reason, report, previous, exit_codes)
        seen = replace(seen, from_events=from_events, events_unreadable=events_unreadable)
        rules = Rules(timeouts.ack_timeout_seconds, timeouts.error_read_grace_seconds, current.node_groups)
        outcome = outcome_of(meta, seen, rules)
        if outcome.cancel:
            await api.cancel_one(meta.queue, meta.job_set_id, meta.job_id, reason="task timeout exceeded")
        if outcome.error is not None and outcome.error.code == "BlobStoreUnreadable":
            log.warning("job %s: the blob store could not be read: %s", meta.job_id, unreadable)
        self._remember(meta.job_id, outcome)
        return replace(outcome, report=report)

    def _remember(self, job_id: str, outcome: JobOutcome) -> None:
        """Keep the phase reported for a job in flight (so it never goes backwards); forget an ended one."""
        if outcome.terminal or outcome.state in TERMINAL_STATES:
            self._phases.pop(job_id, None)
            self._queued_reports.forget(job_id)
            return
        self._phases[job_id] = outcome.phase
        self._phases.move_to_end(job_id)
        while len(self._phases) > MAX_REMEMBERED_PHASES:
            self._phases.popitem(last=False)

    async def _queued_report(self, current: ConnectorContext, meta: ArmadaJobMetadata, now: float) -> QueuedReport:
        return await self._queued_reports.report_for(
            current.api,
            meta.job_id,
            meta.queue,
            meta.node_group,
            current.node_groups,
            queued_report_max_age(meta, now, current.settings.timeouts.queued_report_refresh_seconds),
        )

    async def get(self, resource_meta: ArmadaJobMetadata, **kwargs: Any) -> Resource:
        outcome = await self.poll(resource_meta)
        return Resource(
            phase=outcome.phase,
            message=outcome.message,
            log_links=self._log_links(resource_meta),
            custom_info=outcome.info,
        )

    async def delete(self, resource_meta: ArmadaJobMetadata, **kwargs: Any) -> None:
        """Cancel the job, in a CancelJobs call shared with the other deletes of its job set. No state is
        asked first: Armada cancels a finished or already-cancelled job as a no-op."""
        if not resource_meta.job_id:  # create refused it: nothing was submitted
            return
        api = (await self.context()).api
        if resource_meta.spill_jobs:  # whichever step it reached: its job set holds this task's jobs alone
            await api.cancel_job_set(
                resource_meta.queue, resource_meta.job_set_id, "cancelled by Flyte", queued_only=False
            )
            return
        await api.cancel_one(resource_meta.queue, resource_meta.job_set_id, resource_meta.job_id)

    async def armada_state(self, resource_meta: ArmadaJobMetadata) -> str:
        """Armada's state name for the job, e.g. `CANCELLED`."""
        api = (await self.context()).api
        return state_name((await api.status([resource_meta.job_id]))[resource_meta.job_id])

    async def get_logs(self, resource_meta: ArmadaJobMetadata, **kwargs: Any) -> GetTaskLogsResponse:
        """The job's container log from Armada's log API (Binoculars); where that can't be
        reached, a pointer to the job in Lookout when a link template is set."""
        current = await self.context()
        api, job_id = current.api, resource_meta.job_id
        if resource_meta.spill_jobs and not resource_meta.refusal_code:
            _, job_id = await self._current_step(current, resource_meta, preference.steps_of(resource_meta))
        try:
            lines = await api.logs(job_id, resource_meta.namespace)
        except ArmadaFlyteError as exc:
            links = self._log_links(resource_meta)
            if not links:
                raise ArmadaFlyteError(
                    f"{exc} Set ARMADA_FLYTE_BINOCULARS_URL to your cluster's Binoculars service, "
                    "or ARMADA_FLYTE_LOOKOUT_URL_TEMPLATE to link to Lookout instead."
                ) from None
            lines = [f"Armada's log service is not reachable ({exc}); the job's logs are in Lookout: {links[0].uri}"]
        return GetTaskLogsResponse(
            body=GetTaskLogsResponseBody(
                results=lines,
                lines=[payload_pb2.LogLine(message=line, originator=payload_pb2.USER) for line in lines],
            )
        )

    def _log_links(self, meta: ArmadaJobMetadata) -> list[TaskLog]:
        template = self._current.settings.connection.lookout_url_template if self._current else None
        if not template:
            return []
        uri = template.format(job_id=meta.job_id, queue=meta.queue, job_set_id=meta.job_set_id)
        return [TaskLog(uri=uri, name="Armada Lookout")]


def _details_of(run: RunFacts, state: int) -> RunDetails:
    """The run details GetJobDetails would give, from what the job set's events said."""
    return RunDetails(run.node, run.cluster, state_name(state), run.finished_at, run.started_at)


def _identity(task_template: Any, metadata: Any) -> RunIdentity:
    """Run identity from Flyte's metadata, or, in local runs, from the rendered a0 args."""
    identity = RunIdentity.from_metadata(metadata, task_template.id.name)
    if identity.run:
        return identity
    args = list(task_template.container.args) if task_template.HasField("container") else []

    def arg(flag: str) -> str:
        return args[args.index(flag) + 1] if flag in args[:-1] else ""

    run, action = arg("--run-name"), arg("--name")
    return RunIdentity(
        org=identity.org,
        project=identity.project,
        domain=identity.domain,
        run="" if "{{" in run else run,
        action="" if "{{" in action else action,
        attempt=identity.attempt,
        task=identity.task,
    )


ConnectorRegistry.register(ArmadaConnector(), override=True)
