"""Which Flyte run, action and attempt a job belongs to, and the ids Armada knows it by."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

DEFAULT_ORG = "default"
"""The `--org` given to a0 when Flyte's metadata names none (a0 requires one)."""


@dataclass(frozen=True)
class RunIdentity:
    """Which Flyte run, action and attempt a job belongs to."""

    org: str = ""
    project: str = ""
    domain: str = ""
    run: str = ""
    action: str = ""
    attempt: int = 0
    task: str = ""

    @classmethod
    def from_metadata(cls, metadata: Any, task_name: str = "") -> RunIdentity:
        """Read it from Flyte's TaskExecutionMetadata (missing in local runs: fields stay empty)."""
        if metadata is None or not metadata.HasField("task_execution_id"):
            return cls(task=task_name)
        tid = metadata.task_execution_id
        execution = tid.node_execution_id.execution_id
        return cls(
            org=execution.org or tid.task_id.org or dict(metadata.labels).get("organization", ""),
            project=execution.project or tid.task_id.project,
            domain=execution.domain or tid.task_id.domain,
            run=execution.name,
            action=tid.node_execution_id.node_id,
            attempt=tid.retry_attempt,
            task=task_name or tid.task_id.name,
        )

    def external_job_uri(self) -> str:
        """`flyte://org/project/domain/run/action/attempt`: finds the job from Flyte's identity
        (Armada's GetJobStatusUsingExternalJobUri); empty when the run is not known."""
        if not self.run:
            return ""
        parts = (self.org or DEFAULT_ORG, self.project, self.domain, self.run, self.action, str(self.attempt))
        return "flyte://" + "/".join(parts)

    def client_id(self, outputs_path: str) -> str:
        """Deterministic Armada client_id (<= 100 chars): a retried CreateTask reattaches, never resubmits."""
        key = "|".join([self.org, self.project, self.domain, self.run, self.action, str(self.attempt), outputs_path])
        return "flyte-" + hashlib.sha256(key.encode()).hexdigest()[:48]
