"""Task templates and polling helpers for the connector tests."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, Optional

from flyteidl2.core import tasks_pb2

from armada_flyte.spec import ArmadaConfig, SubmissionSpec

from support.flyte_metadata import execution_metadata  # noqa: F401  (re-exported for the connector tests)


def python_template(
    code: str,
    config: ArmadaConfig = ArmadaConfig(),
    name: str = "demo.task",
    cpu="100m",
    memory="64Mi",
    sources: Optional[dict[str, str]] = None,
) -> tasks_pb2.TaskTemplate:
    """A task template whose container runs `python -c code` (a plain container, not a0)."""
    template = tasks_pb2.TaskTemplate(type="armada")
    template.id.name = name
    template.container.image = "python:3.11-slim"
    template.container.command.extend([sys.executable, "-c", code])
    template.container.resources.limits.add(name=tasks_pb2.Resources.CPU, value=cpu)
    template.container.resources.limits.add(name=tasks_pb2.Resources.MEMORY, value=memory)
    spec = SubmissionSpec.from_config(config, sources or {k: "task" for k in ("architecture",) if config.architecture})
    template.custom.update(spec.to_custom())
    return template


def with_pod_spec(template: tasks_pb2.TaskTemplate, **pod: Any) -> tasks_pb2.TaskTemplate:
    """`template` as a task with a pod template: its container, named `primary` (updated with `primary=`),
    beside these pod spec fields (Kubernetes' JSON names, e.g. hostNetwork=True)."""
    from google.protobuf import json_format

    container = json_format.MessageToDict(template.container)
    container.update(name="primary", resources={"limits": {"cpu": "100m", "memory": "64Mi"}})
    container.update(pod.pop("primary", {}))
    template.k8s_pod.pod_spec.update({"containers": [container], **pod})
    template.k8s_pod.primary_container_name = "primary"
    template.ClearField("container")
    return template


async def wait_for(connector: Any, meta: Any, phases: set[int], timeout: float = 60.0) -> Any:
    """Poll `get` until the phase is one of `phases` (fails the test after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        resource = await connector.get(meta)
        if resource.phase in phases:
            return resource
        if time.monotonic() > deadline:
            raise AssertionError(f"job {meta.job_id} stuck in phase {resource.phase}: {resource.message}")
        await asyncio.sleep(0.05)


def run(coro):
    return asyncio.run(coro)
