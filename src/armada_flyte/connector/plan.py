"""The one pipeline from a task template to the Armada job it becomes.

custom -> template pod -> architecture -> placement -> job request: pure, so `create` and the
admin's dry run submit and print exactly the same job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from google.protobuf import json_format

from armada_flyte.connector.blob import BLOB_ENV, BlobSettings
from armada_flyte.connector.node_groups import NodeGroups
from armada_flyte.connector.placement import Placement, ResolvedArchitecture, placement_for, resolve_architecture
from armada_flyte.connector.pod import JobRequest, RunIdentity, TemplatePod, build_job_request
from armada_flyte.connector.secrets import DEFAULT_ENV_PREFIX, apply_secret_mounts, secret_mounts
from armada_flyte.spec import SubmissionSpec


@dataclass(frozen=True)
class JobPlan:
    """What one task template becomes on Armada, and the decisions that shaped it."""

    spec: SubmissionSpec
    template: TemplatePod
    resolved: ResolvedArchitecture
    placement: Placement
    job: JobRequest
    job_set_id: str

    @property
    def architecture(self) -> str:
        return self.placement.architecture.value if self.placement.architecture else ""


def plan_job(
    task_template: Any,
    node_groups: NodeGroups,
    identity: RunIdentity,
    output_prefix: str,
    blob_store: BlobSettings,
    extra_env: Optional[Mapping[str, str]] = None,
    secret_env_prefix: str = DEFAULT_ENV_PREFIX,
) -> JobPlan:
    """Resolve and place the task, and build its job request. Raises the typed errors of each step."""
    spec = SubmissionSpec.from_custom(json_format.MessageToDict(task_template.custom))
    template = TemplatePod.of(task_template)
    resolved = resolve_architecture(spec.architecture, spec.source_of("architecture"), node_groups, template.pod_spec)
    placement = placement_for(resolved, node_groups, template.pod_spec)
    job = build_job_request(template, spec, resolved, placement, identity, output_prefix, blob_store, extra_env)
    security = task_template.security_context if task_template.HasField("security_context") else None
    blob_env = {entry["name"] for entry in blob_store.pod_env()}
    apply_secret_mounts(job.pod_spec, secret_mounts(security, secret_env_prefix), reserved_env=blob_env | set(BLOB_ENV))
    job_set_id = spec.job_set_id or f"flyte-{identity.run or 'local'}"
    return JobPlan(spec, template, resolved, placement, job, job_set_id)
