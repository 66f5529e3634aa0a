"""Tasks that hold a node group's CPUs through the connector until the test lets them end, so the next
job of that architecture has to wait for room (the default embedded cluster, and a bed's: two nodes of
4 CPUs per architecture)."""

from __future__ import annotations

from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte import ArmadaConfig

from support.armada_templates import execution_metadata, python_template, wait_for

DONE = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.ABORTED, TaskExecution.RETRYABLE_FAILED}
NODE_CPUS = 4


def blocker_code(stop_file) -> str:
    return f"import os, time\nwhile not os.path.exists({str(stop_file)!r}): time.sleep(0.05)"


async def fill(connector, architecture: str, stop_file, run_name: str, cpu: str = str(NODE_CPUS), count: int = 2):
    """Pin `count` blockers of `cpu` CPUs to `architecture` and wait until they all run."""
    metas = []
    for n in range(count):
        template = python_template(blocker_code(stop_file), ArmadaConfig(architecture=architecture), cpu=cpu)
        metas.append(
            await connector.create(
                template, "s3://b/raw", task_execution_metadata=execution_metadata(run_name, f"b{n}")
            )
        )
    for meta in metas:
        resource = await wait_for(connector, meta, {TaskExecution.RUNNING} | DONE)
        assert resource.phase == TaskExecution.RUNNING, resource.message
        assert resource.custom_info["architecture"] == architecture
    return metas


async def finish(connector, metas, stop_file):
    """Let the blockers end, and wait until they have."""
    stop_file.write_text("stop")
    for meta in metas:
        assert (await wait_for(connector, meta, DONE)).phase == TaskExecution.SUCCEEDED
