"""Makespan of 40 short tasks with `architecture="any"` against 40 pinned to one architecture.

Both rounds go through the connector (create, then get until done) into the embedded Armada
server on its default cluster (two amd64 and two arm64 nodes of 4 CPUs; pods are local
processes). Each task takes 1 CPU and sleeps `--sleep` seconds, so pinned tasks run 8 at a time
and `any` tasks 16 at a time: the `any` round should take about 3 waves instead of 5. Prints JSON.

    .venv/bin/python benchmarks/bench_any_architecture.py [--tasks 40] [--sleep 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import sys
import time

from flyteidl2.core import tasks_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte import ArmadaConfig
from armada_flyte.spec import SubmissionSpec

DONE = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.ABORTED, TaskExecution.RETRYABLE_FAILED}
POLL_SECONDS = 0.1


def sleep_template(
    seconds: float, architecture: str, index: int, spill_after: float | None = None
) -> tasks_pb2.TaskTemplate:
    """A plain-container task of 1 CPU that sleeps, pinned to `architecture`, `any`, or a preference
    (`arm64,amd64`, moving on after `spill_after`)."""
    template = tasks_pb2.TaskTemplate(type="armada")
    template.id.name = f"bench.sleep{index}"
    template.container.image = "python:3.11-slim"
    template.container.command.extend([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    template.container.resources.limits.add(name=tasks_pb2.Resources.CPU, value="1")
    template.container.resources.limits.add(name=tasks_pb2.Resources.MEMORY, value="64Mi")
    job_set = f"bench-{architecture.replace(',', '-')}"
    config = ArmadaConfig(architecture=architecture, job_set_id=job_set, spill_after=spill_after)
    spec = SubmissionSpec.from_config(config, {"architecture": "task"})
    template.custom.update(spec.to_custom())
    return template


async def one_round(connector, architecture: str, tasks: int, seconds: float) -> dict:
    """Create `tasks` tasks at once and poll each until done; the makespan is first create to last end."""
    started = time.perf_counter()
    metas = [
        await connector.create(sleep_template(seconds, architecture, i), f"s3://b/raw/bench-{architecture}/{i}")
        for i in range(tasks)
    ]
    ends = await asyncio.gather(*(wait_done(connector, meta) for meta in metas))
    landed = collections.Counter(info.get("architecture") or "?" for _, info in ends)
    return {
        "architecture": architecture,
        "tasks": tasks,
        "makespan_s": round(max(end for end, _ in ends) - started, 3),
        "ran_on": dict(sorted(landed.items())),
    }


async def wait_done(connector, meta) -> tuple[float, dict]:
    """Poll the task until it ends: when it ended, and its `custom_info` (raises unless it succeeded)."""
    while True:
        resource = await connector.get(meta)
        if resource.phase in DONE:
            if resource.phase != TaskExecution.SUCCEEDED:
                raise RuntimeError(f"job {meta.job_id}: {resource.message}")
            return time.perf_counter(), dict(resource.custom_info)
        await asyncio.sleep(POLL_SECONDS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--sleep", type=float, default=1.0)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    from armada_flyte.connector.service import ArmadaConnector
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",))) as server:
        armada_flyte.configure(armada_url=server.url, node_groups_preset="embedded")
        connector = ArmadaConnector()
        pinned = asyncio.run(one_round(connector, "amd64", args.tasks, args.sleep))
        anywhere = asyncio.run(one_round(connector, "any", args.tasks, args.sleep))
    result = {
        "benchmark": f"makespan of {args.tasks} tasks of 1 CPU sleeping {args.sleep}s, embedded default cluster",
        "cluster": "2 amd64 + 2 arm64 nodes of 4 CPUs (8 CPUs per architecture)",
        "pinned": pinned,
        "any": anywhere,
        "speedup": round(pinned["makespan_s"] / anywhere["makespan_s"], 2),
        "ideal_waves": {"pinned": -(-args.tasks // 8), "any": -(-args.tasks // 16)},
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
