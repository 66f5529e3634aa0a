"""The `armada` connector: Flyte's create/get/delete, as Armada submit/poll/cancel.

Stateless across calls: everything about a job lives in `ArmadaJobMetadata`, which Flyte
persists and hands back. Loaded by `c0` through the `flyte.connectors` entry point, and used
in-process by local runs.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, fields
from typing import Any, Optional

from flyte.connectors import AsyncConnector, ConnectorRegistry, Resource, ResourceMeta
from flyteidl2.connector.connector_pb2 import GetTaskLogsResponse, GetTaskLogsResponseBody
from flyteidl2.core.execution_pb2 import TaskExecution, TaskLog
from flyteidl2.logs.dataplane import payload_pb2

from armada_flyte.armada_names import TERMINAL_STATES, JobState
from armada_flyte.connector import settings as settings_module
from armada_flyte.connector.armada_api import ArmadaApi
from armada_flyte.connector.blob import BlobSettings, ErrorFileUnreadable, TaskError, read_task_error
from armada_flyte.connector.crash_reasons import WrongArchitecture, wrong_architecture
from armada_flyte.connector.execution_context import ExecutionContext
from armada_flyte.connector.gangs import GangArchitectures
from armada_flyte.connector.image_check import ImagePlatformCheck
from armada_flyte.connector.landing import landing_of
from armada_flyte.connector.phases import TERMINAL_PHASES, phase_of, state_name
from armada_flyte.connector.plan import plan_job
from armada_flyte.connector.pod import RunIdentity
from armada_flyte.connector.queued_report import QueuedReports, explain_rejection
from armada_flyte.connector.settings import ConnectorConfig
from armada_flyte.connector.status_view import view_for
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

_DEADLINE_EXCEEDED = "Pod was active on the node longer than the specified deadline"
"""The kubelet's message when it ends a pod at its activeDeadlineSeconds (reason DeadlineExceeded)."""

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

QUEUED_STATES = frozenset({JobState.QUEUED, JobState.SUBMITTED, JobState.LEASED})


@dataclass
class ArmadaJobMetadata(ResourceMeta):
    """What Flyte persists for one Armada job and hands back on every get/delete.

    Every field has a default and `decode` is lenient, so replicas of different versions read
    each other's metadata during a rolling upgrade or rollback (new fields: defaults; fields a
    newer connector added: ignored). Add fields with defaults; never rename or retype one.
    """

    job_id: str = ""
    job_set_id: str = ""
    queue: str = ""
    namespace: str = "default"
    outputs_path: str = ""
    architecture: str = ""
    architecture_source: str = ""
    node_group: str = ""
    image: str = ""
    """The task's container image, named when a crash shows it lacks the architecture it ran on."""
    any_of: str = ""
    """For `architecture="any"`: the architectures the job may run on, comma-separated."""
    submitted_at: float = 0.0
    task: str = ""
    timeout_seconds: float = 0.0
    """The task's `timeout` (Flyte's max_runtime, per attempt; 0: none), counted from the run's start."""
    queued_timeout_seconds: float = 0.0
    """How long the job may wait to start, counted from submission: `flyte.Timeout(max_queued_time=)`,
    else the task's `timeout`, so no job waits in the queue forever when a timeout is set."""
    gang_id: str = ""
    gang_cardinality: int = 0
    refusal_code: str = ""
    """Set when create refused the task for good (no job was submitted): the error's type name."""
    refusal: str = ""

    def encode(self) -> bytes:
        """The JSON Flyte persists: what the SDK's `json.dumps(asdict(self))` writes, without asdict's
        deep copy (every field is a str, int or float), which costs more than the rest of it."""
        return json.dumps({name: getattr(self, name) for name in _FIELD_NAMES}).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes) -> ArmadaJobMetadata:
        """Read metadata written by any connector version: unknown keys are ignored, missing
        ones take their defaults, and a value of the wrong type falls back to the default."""
        try:
            raw = json.loads(data.decode("utf-8")) if data else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidConfig(
                "resource_meta", data[:80], f"it is not the JSON the armada connector writes ({exc})"
            ) from None
        if not isinstance(raw, dict):
            raise InvalidConfig("resource_meta", raw, "the armada connector writes a JSON object")
        values = {}
        for known in fields(cls):
            if known.name in raw:
                values[known.name] = _coerced(raw[known.name], known.default)
        ignored = sorted(set(raw) - {f.name for f in fields(cls)})
        if ignored:
            log.debug("job %s: ignoring metadata fields of another connector version: %s", raw.get("job_id"), ignored)
        return cls(**values)


_FIELD_NAMES = tuple(f.name for f in fields(ArmadaJobMetadata))


def _coerced(value: Any, default: Any) -> Any:
    """`value` as the type of `default` (metadata holds only str, int and float fields)."""
    if isinstance(default, bool) or not isinstance(default, (str, int, float)):
        return value
    if isinstance(value, type(default)) and not isinstance(value, bool):
        return value
    try:
        return type(default)(value)
    except (TypeError, ValueError):
        return default


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
        self._queued_reports = QueuedReports()

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
    ) -> ArmadaJobMetadata:
        """Plan and submit the task's job; every refusal raises its typed error (local runs)."""
        settings, api = await self._context()
        identity = _identity(task_template, task_execution_metadata)
        extra_env = dict(task_execution_metadata.environment_variables) if task_execution_metadata else None

        def make_plan(image_in_registry: Any = None) -> Any:
            return plan_job(
                task_template,
                self._node_groups,
                identity,
                output_prefix,
                BlobSettings.from_settings(settings),
                extra_env,
                secret_env_prefix=settings.secret_env_var_prefix,
                context=ExecutionContext.of(task_execution_metadata, task_template),
                namespace_template=settings.namespace_template,
                image_in_registry=image_in_registry,
            )

        plan = make_plan()
        architecture = plan.placement.architecture
        if settings.check_image_platforms and plan.resolved.any_of:
            # `any`: the registry narrows the architectures (and refuses an image with none offered).
            in_registry = await self._image_checker(settings).architectures(plan.template.image, identity.task)
            if in_registry is not None:
                plan = make_plan(in_registry)
                architecture = plan.placement.architecture
        elif settings.check_image_platforms and architecture is not None:
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
        view_for(settings).follow(queue, plan.job_set_id)
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
        )

    def _image_checker(self, settings: ConnectorConfig) -> ImagePlatformCheck:
        if self._image_check is None:
            self._image_check = ImagePlatformCheck(settings)
        return self._image_check

    async def poll(self, meta: ArmadaJobMetadata) -> JobOutcome:
        """Ask Armada once; on a terminal state, read a0's error.pb and Armada's reason."""
        if meta.refusal_code or not meta.job_id:
            return _refused(meta)
        settings, api = await self._context()
        state = await view_for(settings).state_of(meta.job_id, meta.queue, meta.job_set_id)
        phase = phase_of(state)
        info: dict[str, Any] = {
            "armada_state": state_name(state),
            "architecture": meta.architecture,
            "node_group": meta.node_group,
        }
        if state in QUEUED_STATES and _over(meta.queued_timeout_seconds, meta.submitted_at):
            why = await self._why_queued(api, settings, meta, info) if state == JobState.QUEUED else ""
            return await self._time_out(api, meta, state, info, meta.queued_timeout_seconds, "waiting to start", why)
        details = None
        if state in (JobState.PENDING, JobState.RUNNING) and (meta.timeout_seconds > 0 or meta.any_of):
            details = (await api.run_details([meta.job_id])).get(meta.job_id)
            if details and _over(meta.timeout_seconds, details.started_at):
                return await self._time_out(api, meta, state, info, meta.timeout_seconds, "running")
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
            message = f"Armada job {meta.job_id} is {state_name(state)}"
            if meta.any_of:
                message += self._landed(meta, details.node if details else "", info)
            if meta.gang_id and state in QUEUED_STATES:
                message += _gang_wait(meta)
            if state == JobState.QUEUED:
                message += await self._why_queued(api, settings, meta, info)
            return JobOutcome(phase, state, message, info=info)

        self._queued_reports.forget(meta.job_id)

        details = (await api.run_details([meta.job_id])).get(meta.job_id)
        node = details.node if details else ""
        info["node"] = node
        task_error = None
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
                # Unknown is not success: a system failure Flyte may retry, never SUCCEEDED.
                log.warning("job %s: the blob store could not be read: %s", meta.job_id, exc)
                message = (
                    f"BlobStoreUnreadable: Armada job {meta.job_id} ended, but the blob store could not be read "
                    f"to learn whether the task raised ({exc}) within error_read_grace_seconds="
                    f"{settings.error_read_grace_seconds:g}; check the blob store (blob_endpoint) and retry"
                )
                info["error"] = {
                    "code": "BlobStoreUnreadable",
                    "kind": "SYSTEM",
                    "recoverable": True,
                    "message": message,
                }
                return JobOutcome(
                    TaskExecution.RETRYABLE_FAILED, state, f"{message} (SYSTEM error)", node=node, info=info
                )
        reason = ""
        if state in (JobState.FAILED, JobState.REJECTED, JobState.PREEMPTED) and task_error is None:
            reason = (await api.errors([meta.job_id])).get(meta.job_id, "")
        where = f"job {meta.job_id}" + (f" on node {node}" if node else "")
        if meta.any_of:
            where = f"job {meta.job_id}" + self._landed(meta, node, info)
        if task_error is not None:
            info["error"] = task_error.as_info()
            # a0 marks an error recoverable unless the task raised NonRecoverableError: a retryable
            # failure lets the backend spend the task's `retries=`, as it does for stock pods.
            phase = TaskExecution.RETRYABLE_FAILED if task_error.recoverable else TaskExecution.FAILED
            kind = task_error.kind.upper()
            message = f"{task_error.describe()} ({kind} error, {where})"
            if crash := wrong_architecture(task_error.message, meta.image, info.get("architecture") or ""):
                message = _explained(crash, message, info)
            return JobOutcome(phase, state, message, task_error, node, info)
        if state == JobState.SUCCEEDED:
            return JobOutcome(TaskExecution.SUCCEEDED, state, f"Armada {where} succeeded", None, node, info)
        if state == JobState.PREEMPTED:
            message = f"Preempted: Armada {where} was preempted" + (f": {reason}" if reason else "")
            info["error"] = {"code": "Preempted", "kind": "SYSTEM", "recoverable": True, "message": message}
            return JobOutcome(TaskExecution.RETRYABLE_FAILED, state, f"{message} (SYSTEM error)", None, node, info)
        if state == JobState.FAILED and meta.timeout_seconds > 0 and _DEADLINE_EXCEEDED in reason:
            # The kubelet ended the pod at its activeDeadlineSeconds before our own check saw the run
            # go over: the same timeout, reported the same way.
            message = (
                f"TaskTimeout: Armada {where} exceeded the task's timeout of {meta.timeout_seconds:g}s running "
                f"(the pod's deadline): {reason}"
            )
            info["error"] = {"code": "TaskTimeout", "kind": "USER", "recoverable": True, "message": message}
            return JobOutcome(TaskExecution.RETRYABLE_FAILED, state, message, None, node, info)
        label = {
            JobState.REJECTED: "was rejected by Armada",
            JobState.CANCELLED: "was cancelled",
        }.get(state, "failed")
        message = f"Armada {where} {label}" + (f": {reason}" if reason else "")
        if state == JobState.FAILED and (
            crash := wrong_architecture(reason, meta.image, info.get("architecture") or "")
        ):
            message = _explained(crash, message, info)
        if state == JobState.REJECTED and (fix := explain_rejection(reason, self._node_groups, meta.node_group)):
            info["fix"] = fix
            message += f"\nTo fix: {fix}"
        return JobOutcome(phase, state, message, None, node, info)

    def _landed(self, meta: ArmadaJobMetadata, node: str, info: dict[str, Any]) -> str:
        """For `any`: record where the job ran in `info`, and say it for the message."""
        landing = landing_of(meta.any_of.split(","), node, self._node_groups)
        info.update(landing.info(meta.any_of.split(",")))
        return landing.describe()

    async def _why_queued(self, api: ArmadaApi, settings: ConnectorConfig, meta: ArmadaJobMetadata, info: dict) -> str:
        """The gist of Armada's scheduling report once the job has been queued long enough (else "");
        the report itself goes to `info["queued_report"]`."""
        if not meta.submitted_at or time.time() - meta.submitted_at < settings.queued_report_after_seconds:
            return ""
        report = await self._queued_reports.report_for(
            api, meta.job_id, meta.queue, meta.node_group, self._node_groups, settings.queued_report_refresh_seconds
        )
        info["queued_report"] = report.info
        return f"; why: {report.message}" if report.message else ""

    async def _time_out(
        self,
        api: ArmadaApi,
        meta: ArmadaJobMetadata,
        state: int,
        info: dict[str, Any],
        limit: float,
        doing: str,
        why: str = "",
    ) -> JobOutcome:
        """Cancel a job over its limit and report the attempt as timed out: retryable, as Flyte's
        per-attempt timeouts are (`retries=` decides whether another attempt runs)."""
        await api.cancel(meta.queue, meta.job_set_id, meta.job_id, reason="task timeout exceeded")
        message = (
            f"TaskTimeout: Armada job {meta.job_id} exceeded the task's timeout of {limit:g}s {doing} "
            f"(it was {state_name(state)}); the job was cancelled"
        )
        if meta.gang_id and state in QUEUED_STATES:
            message += _gang_wait(meta)
        message += why
        self._queued_reports.forget(meta.job_id)
        info["error"] = {"code": "TaskTimeout", "kind": "USER", "recoverable": True, "message": message}
        return JobOutcome(TaskExecution.RETRYABLE_FAILED, state, message, info=info)

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
        if not resource_meta.job_id:  # create refused it: nothing was submitted
            return
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


def _explained(crash: WrongArchitecture, message: str, info: dict[str, Any]) -> str:
    """The crash said as the missing image variant, before what Armada or a0 reported; the fix as for a rejection."""
    info["wrong_architecture"] = crash.as_info()
    info["fix"] = crash.fix()
    return f"{crash.says()}: {message.rstrip()}\nTo fix: {crash.fix()}"


def _refused(meta: ArmadaJobMetadata) -> JobOutcome:
    """The answer for metadata of a task create refused for good (or metadata naming no job)."""
    code = meta.refusal_code or "MissingJobId"
    message = meta.refusal or "the connector metadata names no Armada job (written by a broken connector?)"
    info = {
        "armada_state": "NOT_SUBMITTED",
        "error": {"code": code, "kind": "USER", "recoverable": False, "message": message},
    }
    return JobOutcome(TaskExecution.FAILED, JobState.UNKNOWN, f"{code}: {message}", info=info)


def _over(limit: float, since: float) -> bool:
    """More than `limit` seconds have passed since `since` (either 0: no limit, or not known)."""
    return limit > 0 and since > 0 and time.time() - since > limit


def _gang_wait(meta: ArmadaJobMetadata) -> str:
    """Why a gang member sits in the queue: Armada starts no member until all are submitted."""
    waited = time.time() - meta.submitted_at if meta.submitted_at else 0.0
    bound = (
        f"it fails once queued for the task's timeout of {meta.queued_timeout_seconds:g}s"
        if meta.queued_timeout_seconds
        else "no timeout is set, so it waits until cancelled: set timeout= on the task to bound it"
    )
    return (
        f"; waiting {waited:.0f}s for gang {meta.gang_id}: Armada starts none of its {meta.gang_cardinality} "
        f"members until all are submitted and fit at once (if fewer than {meta.gang_cardinality} tasks "
        f"use gang_id, it never starts; {bound})"
    )


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
