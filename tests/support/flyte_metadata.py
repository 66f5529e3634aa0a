"""The TaskExecutionMetadata a Flyte backend hands a connector with each CreateTask."""

from __future__ import annotations

from flyteidl2.connector.connector_pb2 import TaskExecutionMetadata


def execution_metadata(
    run: str = "run1", action: str = "a0", attempt: int = 0, task: str = "demo.task", org: str = ""
) -> TaskExecutionMetadata:
    """Metadata for attempt `attempt` of action `action` in run `run` of project proj, domain dev."""
    meta = TaskExecutionMetadata()
    tid = meta.task_execution_id
    tid.task_id.project, tid.task_id.domain, tid.task_id.name = "proj", "dev", task
    tid.node_execution_id.node_id = action
    execution = tid.node_execution_id.execution_id
    execution.project, execution.domain, execution.name, execution.org = "proj", "dev", run, org
    tid.retry_attempt = attempt
    return meta
