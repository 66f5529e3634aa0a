"""The time a preference saves by moving at once when waiting cannot help: tasks preferring arm64 reach amd64
at once when Armada rejects their arm64 job (the arm64 group has no node that can hold it), against the same
tasks moving after `spill_after` when the arm64 group is full (the wait a preference needs when it can't tell).

Every round goes through the connector (create, then get until done) into the embedded server's default
cluster or, with `--armada real`, the real-Armada bed in ARMADA_URL (two amd64 and two arm64 nodes of 4 CPUs,
pods as local processes). The rounds:

- `rejected`: the connector's arm64 node group selects a label no node has, so Armada rejects each arm64
  job at its submit check and the task moves to amd64 at once;
- `spill_after`: the arm64 group is full (two pinned 4-CPU tasks hold it), so each task waits `--spill-after`
  seconds queued for room, then moves (today's only move before this change);
- `exec_format_error` (`--mismatch`): each task's program is one the arm64 node's kernel refuses
  (ENOEXEC: a RISC-V ELF header), so its arm64 run fails and it moves to amd64 in the same attempt.

For each task: seconds from create to its amd64 job running (`to_amd64_s`) and to its end. Prints JSON.

    .venv/bin/python benchmarks/bench_architecture_moves.py [--armada real] [--tasks 4] [--spill-after 30]
        [--mismatch]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import pathlib
import statistics
import struct
import sys
import tempfile
import time
import uuid

from flyteidl2.core.execution_pb2 import TaskExecution
from google.protobuf import json_format

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_under_test import add_armada_option, armada_under_test, load_average  # noqa: E402
from bench_any_architecture import DONE, POLL_SECONDS, sleep_template  # noqa: E402

import armada_flyte  # noqa: E402

RAN = (TaskExecution.RUNNING, TaskExecution.SUCCEEDED)
SESSION = uuid.uuid4().hex[:6]
"""In every output path, so client ids are new on each run (a bed deduplicates client ids for a week)."""

BLOCKER_SECONDS_PAST_SPILL = 20.0
"""The blockers holding arm64 outlast the wait by this much, so every waiting task spills."""
FOREIGN_ELF = struct.pack("<4s5B7xHHI", b"\x7fELF", 2, 1, 1, 0, 0, 2, 243, 1).ljust(64, b"\0")
"""An ELF header of a RISC-V executable: a kernel without a handler for it refuses it (ENOEXEC)."""


async def to_amd64(connector, meta, started: float) -> dict:
    """Poll until the task ends; when its amd64 job was first seen running, when it ended, and how it moved."""
    on_amd64 = 0.0
    while True:
        resource = await connector.get(meta)
        info = dict(resource.custom_info)
        if not on_amd64 and info.get("architecture") == "amd64" and resource.phase in RAN:
            on_amd64 = time.perf_counter()
        if resource.phase in DONE:
            if resource.phase != TaskExecution.SUCCEEDED:
                raise RuntimeError(f"job {meta.job_id}: {resource.message}")
            ended = time.perf_counter()
            return {
                "to_amd64_s": round((on_amd64 or ended) - started, 2),
                "to_end_s": round(ended - started, 2),
                "moved_by": info.get("moved_by", ""),
                "architecture": info.get("architecture"),
            }
        await asyncio.sleep(POLL_SECONDS)


def mismatch_template(index: int, spill_after: float):
    """A task of 1 CPU whose program the arm64 nodes refuse (ENOEXEC); on amd64 it sleeps a second."""
    from armada_flyte.connector.model.job_request import LABEL_ARCH

    template = sleep_template(1.0, "arm64,amd64", index, spill_after)
    template.id.name = f"bench.foreign{index}"
    code = (
        "import os, time\n"
        "if os.environ['ARCH'] == 'arm64':\n"
        f"    open('foreign', 'wb').write({FOREIGN_ELF!r}); os.chmod('foreign', 0o755); os.execv('./foreign', ['x'])\n"
        "time.sleep(1)\n"
    )
    del template.container.command[:]
    template.container.command.extend([sys.executable, "-c", code])
    container = json_format.MessageToDict(template.container)  # a container's env can't say fieldRef: a pod can
    container.update(
        name="primary",
        resources={"limits": {"cpu": "1", "memory": "64Mi"}},
        env=[{"name": "ARCH", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{LABEL_ARCH}']"}}}],
    )
    template.k8s_pod.pod_spec.update({"containers": [container]})
    template.k8s_pod.primary_container_name = "primary"
    template.ClearField("container")
    return template


async def one_round(connector, name: str, tasks: int, spill_after: float, blockers: int = 0) -> dict:
    """`tasks` tasks preferring arm64 created at once (after `blockers` 4-CPU tasks pinned to arm64 run)."""
    held = []
    for n in range(blockers):
        template = sleep_template(spill_after + BLOCKER_SECONDS_PAST_SPILL, "arm64", 100 + n)
        template.container.resources.limits[0].value = "4"
        held.append(await connector.create(template, f"s3://b/raw/bench-moves-{SESSION}-{name}-block/{n}"))
    while [(await connector.get(meta)).phase for meta in held] != [TaskExecution.RUNNING] * blockers:
        await asyncio.sleep(POLL_SECONDS)
    started = time.perf_counter()
    metas = []
    for i in range(tasks):
        template = (
            mismatch_template(i, spill_after)
            if name == "exec_format_error"
            else sleep_template(1.0, "arm64,amd64", i, spill_after)
        )
        metas.append(await connector.create(template, f"s3://b/raw/bench-moves-{SESSION}-{name}/{i}"))
    ends = await asyncio.gather(*(to_amd64(connector, meta, started) for meta in metas))
    for meta in held:
        await connector.delete(meta)
    reached = [end["to_amd64_s"] for end in ends]
    return {
        "tasks": tasks,
        "to_amd64_s": {"min": min(reached), "median": round(statistics.median(reached), 2), "max": max(reached)},
        "to_end_s_max": max(end["to_end_s"] for end in ends),
        "moved_by": sorted({end["moved_by"] for end in ends}),
        "on_amd64": sum(1 for end in ends if end["architecture"] == "amd64"),
    }


def groups_without_arm64_nodes(folder: pathlib.Path) -> str:
    from armada_flyte.connector.config.node_groups import NodeGroups

    data = NodeGroups.preset("embedded").model_dump(mode="json", exclude_defaults=True)
    data["architectures"]["arm64"]["node_selector"]["armada-flyte.bench/pool"] = "none-such"
    path = folder / "node-groups.yaml"
    path.write_text(json.dumps(data))
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_armada_option(parser)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--spill-after", type=float, default=30.0)
    parser.add_argument("--mismatch", action="store_true", help="also the exec format error round")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    from armada_flyte.connector.service import ArmadaConnector

    load_before = load_average()
    rounds = {}
    with armada_under_test(args.armada, paused=False) as armada, tempfile.TemporaryDirectory() as folder:
        common = dict(armada_url=armada.url, queued_report_after_seconds=0, queued_report_refresh_seconds=2.0)
        armada_flyte.configure(**common, node_groups_file=groups_without_arm64_nodes(pathlib.Path(folder)))
        connector = ArmadaConnector()
        rounds["rejected"] = asyncio.run(one_round(connector, "rejected", args.tasks, args.spill_after))
        asyncio.run(connector.close())
        armada_flyte.configure(node_groups_file=None, node_groups_preset="embedded")
        connector = ArmadaConnector()
        rounds["spill_after"] = asyncio.run(one_round(connector, "spill_after", args.tasks, args.spill_after, 2))
        if args.mismatch:
            rounds["exec_format_error"] = asyncio.run(
                one_round(connector, "exec_format_error", args.tasks, args.spill_after)
            )
        asyncio.run(connector.close())
    rejected, waited = rounds["rejected"]["to_amd64_s"]["median"], rounds["spill_after"]["to_amd64_s"]["median"]
    result = {
        "benchmark": f"{args.tasks} tasks of 1 CPU preferring arm64: seconds to run on amd64, moved at once "
        f"against after spill_after {args.spill_after:g} s",
        "armada": args.armada,
        "cluster": "2 amd64 + 2 arm64 nodes of 4 CPUs",
        **rounds,
        "saved_s_median": round(waited - rejected, 2),
        "load_average": [load_before, load_average()],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
