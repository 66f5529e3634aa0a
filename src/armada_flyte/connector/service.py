"""The `armada` connector: Flyte's create/get/delete, as Armada submit/poll/cancel.

Stateless across calls: everything about a job lives in `ArmadaJobMetadata`, which Flyte
persists and hands back. Loaded by `c0` through the `flyte.connectors` entry point, and used
in-process by local runs.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from flyte.connectors import AsyncConnector, ConnectorRegistry, Resource, ResourceMeta
from flyteidl2.connector.connector_pb2 import GetTaskLogsResponse, GetTaskLogsResponseBody
from flyteidl2.core.execution_pb2 import TaskExecution, TaskLog
from flyteidl2.logs.dataplane import payload_pb2

from armada_flyte.armada_names import TERMINAL_STATES, JobState
from armada_flyte.connector import settings as settings_module
from armada_flyte.connector.armada_api import ArmadaApi
from armada_flyte.connector.blob import BlobSettings, ErrorFileUnreadable, TaskError, read_task_error
from armada_flyte.connector.gangs import GangArchitectures
from armada_flyte.connector.image_check import ImagePlatformCheck
from armada_flyte.connector.phases import TERMINAL_PHASES, phase_of, state_name
from armada_flyte.connector.plan import plan_job
from armada_flyte.connector.pod import RunIdentity
from armada_flyte.connector.settings import ConnectorConfig
from armada_flyte.errors import ArmadaFlyteError
from armada_flyte.spec import TASK_TYPE

log = logging.getLogger(__name__)


@dataclass
class ArmadaJobMetadata(ResourceMeta):
    """What Flyte persists for one Armada job and hands back on every get/delete."""

    job_id: str
    job_set_id: str
    queue: str
    namespace: str = "default"
    outputs_path: str = ""
    architecture: str = ""
    architecture_source: str = ""
    node_group: str = ""
    submitted_at: float = 0.0
    task: str = ""


@dataclass(frozen=True)
class JobOutcome:
    """One poll's answer, richer than Flyte's `Resource` so local runs can raise the right error."""

    phase: int
    state: int
    message: str
    task_error: Optional[TaskError] = None
    node: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


class ArmadaConnector(AsyncConnector[ArmadaJobMetadata]):
    """Submits Flyte tasks as Armada jobs, polls them, and cancels them."""

    name = "Armada Connector"
    task_type_name = TASK_TYPE
    metadata_type = ArmadaJobMetadata

    def __init__(self) -> None:
        self._generation = -1
        self._settings: Optional[ConnectorConfig] = None
        self._api: Optional[ArmadaApi] = None
        self._node_groups = None
        self._image_check = None
        self._gangs = GangArchitectures()

    # ---- settings, resolved lazily and again after `configure` ----
    async def _context(self) -> tuple[ConnectorConfig, ArmadaApi]:
        """The current settings and client; rebuilt (closing the old ones) after `configure`."""
        generation = settings_module.generation()
        if self._settings is None or generation != self._generation:
            settings = settings_module.resolve_settings()
            node_groups = settings.node_groups()
            stale_api, stale_check = self._api, self._image_check
            self._settings, self._api, self._node_groups = settings, ArmadaApi(settings), node_groups
            self._image_check = None
            self._generation = generation
            if stale_api is not None:
                await stale_api.close()
            if stale_check is not None:
                stale_check.close()
        assert self._api is not None
        return self._settings, self._api

    async def create(
        self,
        task_template: Any,
        output_prefix: str,
        inputs: Optional[dict[str, Any]] = None,
        task_execution_metadata: Any = None,
        **kwargs: Any,
    ) -> ArmadaJobMetadata:
        settings, api = await self._context()
        identity = _identity(task_template, task_execution_metadata)
        extra_env = dict(task_execution_metadata.environment_variables) if task_execution_metadata else None
        plan = plan_job(
            task_template,
            self._node_groups,
            identity,
            output_prefix,
            BlobSettings.from_settings(settings),
            extra_env,
            secret_env_prefix=settings.secret_env_var_prefix,
        )
        architecture = plan.placement.architecture
        if settings.check_image_platforms and architecture is not None:
            await self._check_image(settings, plan.template.image, architecture, identity.task)
        job, queue = plan.job, plan.spec.queue
        if job.gang_id:
            self._gangs.claim(queue, job.gang_id, job.client_id, plan.architecture, identity.task)
        try:
            (job_id,) = await api.submit(queue, plan.job_set_id, [job])
        except BaseException:
            if job.gang_id:
                self._gangs.release(queue, job.gang_id, job.client_id)
            raise
        log.info(
            "submitted %s as Armada job %s (queue %s, %s)", identity.task, job_id, queue, architecture or "any arch"
        )
        return ArmadaJobMetadata(
            job_id=job_id,
            job_set_id=plan.job_set_id,
            queue=queue,
            namespace=plan.spec.namespace,
            outputs_path=job.outputs_path,
            architecture=plan.architecture,
            architecture_source=plan.resolved.source,
            node_group=plan.placement.node_group or "",
            submitted_at=time.time(),
            task=identity.task,
        )

    async def _check_image(self, settings: ConnectorConfig, image: str, architecture: Any, task: str) -> None:
        if self._image_check is None:
            self._image_check = ImagePlatformCheck(settings)
        await self._image_check.check(image, architecture, task)

    async def poll(self, meta: ArmadaJobMetadata) -> JobOutcome:
        """Ask Armada once; on a terminal state, read a0's error.pb and Armada's reason."""
        settings, api = await self._context()
        state = await api.status_of(meta.job_id)
        phase = phase_of(state)
        info = {"armada_state": state_name(state), "architecture": meta.architecture, "node_group": meta.node_group}
        if state == JobState.UNKNOWN:
            waited = time.time() - meta.submitted_at
            if meta.submitted_at and waited > settings.ack_timeout_seconds:
                return JobOutcome(
                    TaskExecution.FAILED,
                    state,
                    f"Armada has not acknowledged job {meta.job_id} after {waited:.0f}s (ack timeout "
                    f"{settings.ack_timeout_seconds:.0f}s); it was lost or submitted to another Armada.",
                    info=info,
                )
            return JobOutcome(phase, state, f"Armada job {meta.job_id} not visible yet", info=info)
        if state not in TERMINAL_STATES:
            return JobOutcome(phase, state, f"Armada job {meta.job_id} is {state_name(state)}", info=info)

        details = (await api.run_details([meta.job_id])).get(meta.job_id)
        node = details.node if details else ""
        info["node"] = node
        task_error = None
        unread = ""
        if state in (JobState.SUCCEEDED, JobState.FAILED):
            try:
                task_error = await read_task_error(
                    meta.outputs_path, settings.error_read_timeout_seconds, BlobSettings.from_settings(settings)
                )
            except ErrorFileUnreadable as exc:
                ended = details.finished_at if details else 0.0
                if ended and time.time() - ended < settings.error_read_grace_seconds:
                    # Not terminal yet: a0 may have failed, and only error.pb would say so.
                    return JobOutcome(
                        TaskExecution.RUNNING, state, f"Armada job {meta.job_id} ended; {exc}; retrying", info=info
                    )
                log.warning("job %s: %s; reporting Armada's state alone", meta.job_id, exc)
                unread = f" (its error file could not be read: {exc})"
        reason = ""
        if state in (JobState.FAILED, JobState.REJECTED, JobState.PREEMPTED) and task_error is None:
            reason = (await api.errors([meta.job_id])).get(meta.job_id, "")
        where = f"job {meta.job_id}" + (f" on node {node}" if node else "")
        if task_error is not None:
            return JobOutcome(TaskExecution.FAILED, state, f"{task_error.describe()} ({where})", task_error, node, info)
        if state == JobState.SUCCEEDED:
            return JobOutcome(TaskExecution.SUCCEEDED, state, f"Armada {where} succeeded{unread}", None, node, info)
        label = {
            JobState.REJECTED: "was rejected by Armada",
            JobState.PREEMPTED: "was preempted",
            JobState.CANCELLED: "was cancelled",
        }.get(state, "failed")
        message = f"Armada {where} {label}" + (f": {reason}" if reason else "")
        return JobOutcome(phase, state, message, None, node, info)

    async def get(self, resource_meta: ArmadaJobMetadata, **kwargs: Any) -> Resource:
        outcome = await self.poll(resource_meta)
        return Resource(
            phase=outcome.phase,
            message=outcome.message,
            log_links=self._log_links(resource_meta),
            custom_info=outcome.info,
        )

    async def delete(self, resource_meta: ArmadaJobMetadata, **kwargs: Any) -> None:
        """Cancel the job; cancelling a finished or already-cancelled job is a no-op."""
        _, api = await self._context()
        state = (await api.status([resource_meta.job_id]))[resource_meta.job_id]
        if state in TERMINAL_STATES:
            return
        await api.cancel(resource_meta.queue, resource_meta.job_set_id, resource_meta.job_id)

    async def armada_state(self, resource_meta: ArmadaJobMetadata) -> str:
        """Armada's state name for the job, e.g. `CANCELLED`."""
        _, api = await self._context()
        return state_name((await api.status([resource_meta.job_id]))[resource_meta.job_id])

    async def get_logs(self, resource_meta: ArmadaJobMetadata, **kwargs: Any) -> GetTaskLogsResponse:
        """The job's container log from Armada's log API (Binoculars); where that can't be
        reached, a pointer to the job in Lookout when a link template is set."""
        settings, api = await self._context()
        try:
            lines = await api.logs(resource_meta.job_id, resource_meta.namespace)
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
        template = self._settings.lookout_url_template if self._settings else None
        if not template:
            return []
        uri = template.format(job_id=meta.job_id, queue=meta.queue, job_set_id=meta.job_set_id)
        return [TaskLog(uri=uri, name="Armada Lookout")]


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
