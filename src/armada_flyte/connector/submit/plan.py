"""The one pass from a task template to the Armada jobs it becomes.

`plan_job(template, settings, context, image_in_registry)`: the task's decisions (spec, pod,
architecture, each step's placement: kept per template), the job's namespace, the admin's tenancy
policy for backend runs (`tenancy`), then each step's job, built whole (`pod.job_request`), and the job
set they go to. Pure, so `create` and the admin's dry run submit and print exactly the same jobs; a new
rule about what may be submitted (an admin's policy) is one more pure step here.

For an ordered architecture preference every step's job is built at create, since GetTask gets the
metadata back, never the template: the first is submitted, the later ones are kept in the metadata
(`JobPlan.metadata`), each with a client id of its own, and all of them in a job set of the task's own
(a gang's: the gang's), so "cancel it if it is still queued" is one CancelJobSet with a QUEUED filter.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Optional

from armada_flyte.armada_names import MAX_JOB_SET_ID
from armada_flyte.connector.armada.submit_items import submit_item
from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.connector.config.settings_groups import Tenancy
from armada_flyte.connector.model.job_request import PREFERENCE_JOB_SET, JobRequest
from armada_flyte.connector.model.metadata import ArmadaJobMetadata, encoded_steps
from armada_flyte.connector.submit.decisions import TaskDecisions, task_decisions
from armada_flyte.connector.submit.execution_context import ExecutionContext, job_namespace
from armada_flyte.connector.submit.fallback import ImageQuestion
from armada_flyte.connector.submit.placement import ImageArchitectures, Placement
from armada_flyte.connector.submit.pod import job_request
from armada_flyte.connector.submit.secrets import DEFAULT_ENV_PREFIX
from armada_flyte.connector.submit.tenancy import tenancy_refusal


@dataclass(frozen=True)
class SubmitSettings:
    """What of the connector's settings shapes a job."""

    node_groups: NodeGroups
    blob: BlobSettings = BlobSettings()
    secret_env_prefix: str = DEFAULT_ENV_PREFIX
    namespace_template: Optional[str] = None
    tenancy: Tenancy = Tenancy()
    """What a backend run's task may choose for itself (`submit.tenancy`)."""

    @classmethod
    def of(cls, settings: ConnectorConfig, node_groups: NodeGroups) -> SubmitSettings:
        """From the connector's settings (`node_groups`: the ones it resolved from them)."""
        targets = settings.targets
        return cls(
            node_groups,
            BlobSettings.from_settings(settings.blob),
            targets.secret_env_var_prefix,
            targets.namespace_template,
            settings.tenancy,
        )


@dataclass(frozen=True)
class PlannedStep:
    """One step's job: the architecture it runs on (None: no constraint, or `any`), its node group."""

    placement: Placement
    job: JobRequest

    @property
    def architecture(self) -> str:
        return self.placement.architecture.value if self.placement.architecture else ""

    @property
    def node_group(self) -> str:
        return self.placement.node_group or ""


@dataclass(frozen=True)
class JobPlan:
    """What one create of a task becomes on Armada, and the decisions that shaped it."""

    task: TaskDecisions
    steps: tuple[PlannedStep, ...]
    """The job create submits, then, for a preference, each later architecture's, in order: submitted only
    if the one before waited `spill_after` seconds for room and was cancelled."""
    job_set_id: str
    namespace_source: str = "default"
    """Who chose the job's namespace: task / env / project (ArmadaConfig), admin, backend, or default."""
    spill_after: float = 0.0
    fallback: str = ""
    """Set when the task was narrowed to the admin's fallback architecture: why (its image's platforms could
    not be read at submit)."""

    @property
    def job(self) -> JobRequest:
        """The job create submits."""
        return self.steps[0].job

    @property
    def later_steps(self) -> tuple[PlannedStep, ...]:
        return self.steps[1:]

    @property
    def queue(self) -> str:
        return self.task.spec.queue

    @property
    def architecture(self) -> str:
        return self.steps[0].architecture

    @property
    def any_of(self) -> str:
        """For `any`: the architectures it may run on, comma-separated (also when narrowed to one)."""
        return ",".join(a.value for a in self.task.resolved.any_of)

    def metadata(self, job_id: str, submitted_at: float, task: str) -> ArmadaJobMetadata:
        """What Flyte keeps for the task once its first job is submitted as `job_id`."""
        spec, pod, job = self.task.spec, self.task.pod, self.job
        return ArmadaJobMetadata(
            job_id=job_id,
            job_set_id=self.job_set_id,
            queue=spec.queue,
            namespace=job.namespace,
            outputs_path=job.outputs_path,
            architecture=self.architecture,
            architecture_source=self.task.resolved.source,
            node_group=self.steps[0].node_group,
            image=pod.image,
            any_of=self.any_of,
            submitted_at=submitted_at,
            task=task,
            timeout_seconds=pod.timeout_seconds,
            queued_timeout_seconds=pod.queued_timeout_seconds or pod.timeout_seconds,
            gang_id=job.gang_id or "",
            gang_cardinality=(spec.gang_cardinality or 0) if job.gang_id else 0,
            spill_after_seconds=self.spill_after,
            fallback=self.fallback,
            spill_jobs=encoded_steps(
                (s.architecture, s.node_group, submit_item(s.job).SerializeToString()) for s in self.later_steps
            )
            if self.later_steps
            else "",
        )


def plan_job(
    task_template: Any,
    settings: SubmitSettings,
    context: Optional[ExecutionContext] = None,
    image_in_registry: Optional[ImageArchitectures] = None,
) -> JobPlan:
    """Every job of one create of the task, and the decisions behind them. Raises the typed error of the
    step that refuses it (`TenancyRefused`: the admin's tenancy policy, backend runs only).

    `context` is the attempt as the backend describes it (None: a local run, read from the template alone).
    `image_in_registry`: for `any` or a preference, the image's architectures as its registry lists them (or,
    when it can't tell, the admin's fallback architecture: `submit.fallback`).
    """
    context = context or ExecutionContext.of(None, task_template)
    task = task_decisions(
        task_template, settings.node_groups, context.interruptible, settings.secret_env_prefix, image_in_registry
    )
    namespace, namespace_source = job_namespace(task.spec, context, settings.namespace_template)
    if refusal := tenancy_refusal(task, namespace, context, settings.tenancy, settings.namespace_template):
        raise refusal
    args = (
        list(task.pod.container.get("args") or []) if task.pod.from_pod_template else list(task_template.container.args)
    )
    steps = tuple(
        PlannedStep(placement, job_request(task, n, args, context, settings.blob, namespace))
        for n, placement in enumerate(task.placements)
    )
    job_set_id = task.spec.job_set_id or f"flyte-{context.identity.run or 'local'}"
    fallback = image_in_registry.fallback if image_in_registry is not None else ""
    if len(steps) == 1:
        return JobPlan(task, steps, job_set_id, namespace_source, fallback=fallback)
    spill_after = task.spec.spill_after or settings.node_groups.spill_after_seconds
    return JobPlan(task, steps, _own_job_set(job_set_id, steps[0].job), namespace_source, spill_after, fallback)


def image_question(
    task_template: Any, settings: SubmitSettings, context: Optional[ExecutionContext] = None
) -> Optional[ImageQuestion]:
    """The registry question for the task (None: it runs on no architecture in particular, nothing to ask):
    for `any` or a preference, with the architectures it may run on. Reads the same kept decisions `plan_job`
    then builds from."""
    context = context or ExecutionContext.of(None, task_template)
    task = task_decisions(task_template, settings.node_groups, context.interruptible, settings.secret_env_prefix)
    resolved = task.resolved
    if resolved.any_of or resolved.preference:
        return ImageQuestion(task.pod.image, None, resolved.preference or resolved.any_of)
    if resolved.architecture is not None:
        return ImageQuestion(task.pod.image, resolved.architecture)
    return None


def _own_job_set(job_set_id: str, first: JobRequest) -> str:
    """A job set holding only this task's jobs (a gang's: all its members'), so a cancel filtered to QUEUED
    jobs touches nothing else."""
    own = first.gang_id or hashlib.sha256(first.client_id.encode()).hexdigest()[:16]
    suffix = f"{PREFERENCE_JOB_SET}{own}"
    return job_set_id[: MAX_JOB_SET_ID - len(suffix)] + suffix
