"""The `armada` connector: Flyte's create/get/delete, as Armada submit/poll/cancel.

Stateless across calls: everything about a job lives in `ArmadaJobMetadata`, which Flyte persists and
hands back, or is read from Armada on each poll. Loaded by `c0` through the `flyte.connectors` entry
point, and used in-process by local runs. Each call is only the I/O around a pure function below it:
create submits what `submit.plan.plan_job` builds; get fetches what `poll.decision.decide` asks for and
carries out what it decides.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any, Optional

from flyte.connectors import AsyncConnector, ConnectorRegistry, Resource
from flyteidl2.connector.connector_pb2 import GetTaskLogsResponse, GetTaskLogsResponseBody
from flyteidl2.core.execution_pb2 import TaskLog
from flyteidl2.logs.dataplane import payload_pb2

from armada_flyte.armada_names import TERMINAL_STATES
from armada_flyte.connector.config import settings as settings_module
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.connector.context import ConnectorContext
from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.poll import spill
from armada_flyte.connector.poll.decision import Cancel, Decision, Known, current_job, decide
from armada_flyte.connector.poll.outcome import JobOutcome
from armada_flyte.connector.poll.phases import state_name
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.fallback import Fallback
from armada_flyte.connector.submit.gangs import GangArchitectures
from armada_flyte.connector.submit.image_check import ImagePlatformCheck
from armada_flyte.connector.submit.placement import ImageArchitectures
from armada_flyte.connector.submit.plan import image_question, plan_job
from armada_flyte.errors import (
    ArchitectureConflict,
    ArchitectureNotOffered,
    ArmadaFlyteError,
    ImagePlatformMismatch,
    InvalidConfig,
    SubmissionRefused,
    TenancyRefused,
)
from armada_flyte.spec import TASK_TYPE

log = logging.getLogger(__name__)

PERMANENT_CREATE_ERRORS = (
    InvalidConfig,
    ArchitectureNotOffered,
    ArchitectureConflict,
    ImagePlatformMismatch,
    SubmissionRefused,
    TenancyRefused,
)
"""Create errors no retry can fix. Through `c0` any create error reaches the backend as a
retryable failure (Flyte's webapi `launcher.go` retries every CreateTask error, whatever its gRPC
code), so `create` turns these into metadata whose first `get` reports a permanent FAILED."""

MAX_REMEMBERED_PHASES = 10_000
"""Tasks whose last reported phase is kept in the process (least recently polled dropped first)."""


class ArmadaConnector(AsyncConnector[ArmadaJobMetadata]):
    """Submits Flyte tasks as Armada jobs, polls them, and cancels them."""

    name = "Armada Connector"
    task_type_name = TASK_TYPE
    metadata_type = ArmadaJobMetadata

    def __init__(
        self, settings: Optional[ConnectorConfig] = None, view_loop: Optional[asyncio.AbstractEventLoop] = None
    ) -> None:
        """With `settings`, the connector uses them for good; without (as `c0` loads it), it resolves them
        from `configure`, the environment and the settings file, and again after each `configure`. `view_loop`:
        the loop its status view runs on while that loop runs (c0's server loop; see `StatusView`)."""
        self._settings = settings
        self._view_loop = view_loop
        self._generation = -1
        self._current: Optional[ConnectorContext] = None
        self._image_check: Optional[ImagePlatformCheck] = None
        self._gangs = GangArchitectures()
        self._phases: OrderedDict[str, int] = OrderedDict()
        self._spill_cancels = spill.SpillCancels()

    # ---- settings, resolved lazily and again after `configure` ----
    async def context(self) -> ConnectorContext:
        """The current settings, client and status view; rebuilt (closing the old ones) after `configure`, and
        once the loop the view runs on (the one the module loaded in) no longer runs: a new view on its own loop."""
        generation = settings_module.generation() if self._settings is None else 0
        home_ended = self._view_loop is not None and not self._view_loop.is_running()
        if home_ended:
            self._view_loop = None
        if self._current is None or generation != self._generation or home_ended:
            fresh = ConnectorContext.of(self._settings or settings_module.resolve_settings(), self._view_loop)
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

    # ---- create ----
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
        context = ExecutionContext.of(task_execution_metadata, task_template, output_prefix, attempt)
        image = await self._image_answer(current, task_template, context)
        plan = plan_job(task_template, current.submit, context, image)
        job, queue, task = plan.job, plan.queue, context.identity.task
        if job.gang_id:
            self._gangs.claim(queue, job.gang_id, job.client_id, plan.architecture or f"any of {plan.any_of}", task)
        try:
            job_id = await current.api.submit_one(queue, plan.job_set_id, job)
        except BaseException:
            if job.gang_id:
                self._gangs.release(queue, job.gang_id, job.client_id)
            raise
        # The job set's stream starts once its submits are over (or at the first ask), not now: a stream's messages
        # cross c0's event loop, and during a fan-out's creates they held up c0's intake of the next CreateTask
        # calls (benchmarks/README.md, "Creates, issue 33").
        current.view.submitted_to(queue, plan.job_set_id)
        where = plan.architecture or (f"any of {plan.any_of}" if plan.any_of else "any arch")
        if plan.fallback:
            where += f", the admin's fallback architecture: {plan.fallback}"
        log.info("submitted %s as Armada job %s (queue %s, %s)", task, job_id, queue, where)
        return plan.metadata(job_id, time.time(), task)

    async def _image_answer(
        self, current: ConnectorContext, task_template: Any, context: ExecutionContext
    ) -> Optional[ImageArchitectures]:
        """With the image check on, what the image's registry says before planning: a pinned architecture the
        image lacks raises; for `any` or a preference, the image's architectures, or the admin's fallback
        architecture when it can't tell (None: it can't tell, and no fallback applies)."""
        if not current.settings.images.check_image_platforms:
            return None
        question = image_question(task_template, current.submit, context)
        if question is None:
            return None
        if self._image_check is None:
            self._image_check = ImagePlatformCheck(current.settings.images)
        groups = current.submit.node_groups
        fallback = (
            Fallback(groups.fallback_architecture, groups.fallback_set_by) if groups.fallback_architecture else None
        )
        return await self._image_check.answer(question, context.identity.task, fallback)

    # ---- get ----
    async def poll(self, meta: ArmadaJobMetadata) -> JobOutcome:
        """The answer for the task's current job: `decide` says what to fetch, then what Flyte sees and what
        to do (cancel a job over its time limit, spill one that waits for room); this fetches and carries out."""
        current = await self.context()
        known = Known.of(meta, time.time(), self._phases.get(meta.job_id))
        decision = decide(known, current.rules)
        while decision.fetch:
            known = await current.facts.fetch(known, decision.fetch)
            decision = decide(known, current.rules)
        await self._carry_out(current, meta, decision, known.now)
        assert decision.outcome is not None
        return decision.outcome

    async def _carry_out(
        self, current: ConnectorContext, meta: ArmadaJobMetadata, decision: Decision, now: float
    ) -> None:
        outcome = decision.outcome
        assert outcome is not None
        for action in decision.actions:
            if isinstance(action, Cancel):
                await current.api.cancel_one(meta.queue, meta.job_set_id, action.job_id, reason=action.reason)
            elif scope := self._spill_cancels.due(action.job_id, now):  # the same cancel is not sent again at once
                log.info("job %s: %s", action.job_id, outcome.message)
                if scope == spill.JOB_SET:
                    await current.api.cancel_job_set(meta.queue, meta.job_set_id, action.reason, queued_only=True)
                else:
                    await current.api.cancel_one(meta.queue, meta.job_set_id, action.job_id, reason=action.reason)
        if outcome.error is not None and outcome.error.code == "BlobStoreUnreadable":
            log.warning("job %s: the blob store could not be read: %s", decision.job_id, outcome.message)
        if not meta.job_id or meta.refusal_code:
            return
        if outcome.terminal or outcome.state in TERMINAL_STATES:  # ended: forget the phase and the report
            self._phases.pop(meta.job_id, None)
            current.facts.forget(decision.job_id)
            return
        # A task's reported phase never goes back (`outcome_of` reads the last one).
        self._phases[meta.job_id] = outcome.phase
        self._phases.move_to_end(meta.job_id)
        while len(self._phases) > MAX_REMEMBERED_PHASES:
            self._phases.popitem(last=False)

    async def get(self, resource_meta: ArmadaJobMetadata, **kwargs: Any) -> Resource:
        outcome = await self.poll(resource_meta)
        return Resource(
            phase=outcome.phase,
            message=outcome.message,
            log_links=self._log_links(resource_meta),
            custom_info=outcome.info,
        )

    # ---- delete ----
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

    # ---- logs ----
    async def get_logs(self, resource_meta: ArmadaJobMetadata, **kwargs: Any) -> GetTaskLogsResponse:
        """The current job's container log from Armada's log API (Binoculars); where that can't be
        reached, a pointer to the job in Lookout when a link template is set."""
        current = await self.context()
        job_id = resource_meta.job_id
        if resource_meta.spill_jobs and not resource_meta.refusal_code:  # the step it reached, as `decide` says
            known = Known.of(resource_meta, time.time())
            while (where := current_job(known, current.rules)).fetch:
                known = await current.facts.fetch(known, where.fetch)
            job_id = where.job_id
        try:
            lines = await current.api.logs(job_id, resource_meta.namespace)
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


def loading_loop() -> Optional[asyncio.AbstractEventLoop]:
    """The event loop running while this module loads, if any: c0 loads its connectors from inside its server's
    loop, which then runs for as long as c0 does, and the connector's status view runs on it (one grpc.aio loop
    in c0, not two); a local run loads it inside Flyte's own loop, which runs until the process ends. Imported
    outside a running loop, None: the view's own loop (and so once the loading loop has ended: `context`)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


ConnectorRegistry.register(ArmadaConnector(view_loop=loading_loop()), override=True)
