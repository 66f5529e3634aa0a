"""Drive `c0` the way Flyte's backend does: the connector plugin's create/get/delete, and the
executor's retry rule.

Read at flyteorg/flyte 6fadb90: `flyteplugins/go/tasks/plugins/webapi/connector/plugin.go` maps
the connector's RETRYABLE_FAILED to a retryable failure and FAILED to a permanent one;
`executor/pkg/controller/taskaction_controller.go` restarts a retryable failure (aborting the old
resource, then a new create with the attempt number + 1) while attempts < max_attempts, and
turns it into a permanent failure once they are used up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from support.c0_service import ARMADA_TASKS, poll_until_done


@dataclass(frozen=True)
class Attempt:
    number: int
    resource_meta: bytes
    resource: Any  # the terminal connector Resource


def run_with_retries(c0: Any, make_request: Callable[[int], Any], max_attempts: int) -> list[Attempt]:
    """Create attempt 0, poll it to its end, and start the next attempt while the backend would."""
    attempts: list[Attempt] = []
    for number in range(max_attempts):
        meta = c0.CreateTask(make_request(number), timeout=60).resource_meta
        resource = poll_until_done(c0, meta)
        attempts.append(Attempt(number, meta, resource))
        if resource.phase != TaskExecution.RETRYABLE_FAILED:
            break
        # The executor aborts the failed attempt's resource before creating the next one.
        c0.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS), timeout=30)
    return attempts


def phases(attempts: list[Attempt]) -> list[str]:
    return [TaskExecution.Phase.Name(a.resource.phase) for a in attempts]
