"""A trivial task end to end through a real `c0`, from CreateTask to SUCCEEDED, against the raw client's floor.

The task is a plain container (`true`) through the armada connector: CreateTask, then GetTask every
20 ms until it answers SUCCEEDED. The floor, in the same run, alternating: the same pod (the SubmitJobs
item the connector sent, captured at the proxy) submitted with the raw `armada_client` to the same
server and watched on its job set's events until `succeeded`. Each run uses a job set of its own on
either side. Target: the connector at most 1.15x the floor (medians).

`--armada real` needs the real bed WITH an executor (`scripts/real-armada.sh up`, or `up --no-executor`
plus `armada-flyte executor --scheduler $ARMADA_EXECUTOR_API`); `--armada embedded` starts the embedded
server with its process pod runner. Prints one JSON object.

    .venv/bin/python benchmarks/bench_task_through_c0.py [--armada real] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time

from flyteidl2.connector import connector_pb2, service_pb2_grpc
from flyteidl2.core.execution_pb2 import TaskExecution

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_under_test import (  # noqa: E402
    ArmadaUnderTest,
    add_armada_option,
    armada_channel,
    armada_under_test,
    load_average,
)
from bench_connector_scale import ARMADA, metadata, template  # noqa: E402
from c0_process import running_c0  # noqa: E402
from raw_client_floor import submit_and_watch, watching_client  # noqa: E402

TARGET_RATIO = 1.15
POLL_SECONDS = 0.02
TIMEOUT_SECONDS = 120
ENDED_BADLY = (TaskExecution.FAILED, TaskExecution.ABORTED)


def through_c0(stub, run: str) -> float:
    """Seconds from CreateTask to the GetTask that answers SUCCEEDED."""
    began = time.perf_counter()
    created = stub.CreateTask(
        connector_pb2.CreateTaskRequest(
            template=template("armada"),
            output_prefix=f"s3://bench/raw/{run}",
            task_execution_metadata=metadata(run, "a0"),
        ),
        timeout=60,
    )
    request = connector_pb2.GetTaskRequest(resource_meta=created.resource_meta, task_category=ARMADA)
    while time.perf_counter() - began < TIMEOUT_SECONDS:
        resource = stub.GetTask(request, timeout=60).resource
        if resource.phase == TaskExecution.SUCCEEDED:
            return time.perf_counter() - began
        if resource.phase in ENDED_BADLY:
            raise RuntimeError(f"task {run} ended {TaskExecution.Phase.Name(resource.phase)}: {resource.message}")
        time.sleep(POLL_SECONDS)
    raise RuntimeError(f"task {run} did not succeed within {TIMEOUT_SECONDS} s")


def measure(armada: ArmadaUnderTest, runs: int) -> dict:
    stamp = time.strftime("%H%M%S")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"ARMADA_URL": armada.url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
        with (
            running_c0(env, pathlib.Path(tmp) / "c0.log") as (channel, _),
            armada_channel(armada.url) as raw_channel,
        ):
            raw = watching_client(raw_channel, TIMEOUT_SECONDS)
            stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
            armada.proxy.forget_submits()
            through_c0(stub, f"warm-{stamp}")  # warm-up: c0's imports and channel, the executor's first pod
            requests, _ = armada.proxy.submits()
            submit_and_watch(raw, requests[-1], f"raw-warm-{stamp}")
            connector_s, raw_s = [], []
            for i in range(runs):
                connector_s.append(through_c0(stub, f"e2e-{stamp}-{i}"))
                raw_s.append(submit_and_watch(raw, requests[-1], f"raw-e2e-{stamp}-{i}"))
    ratio = statistics.median(connector_s) / statistics.median(raw_s)
    return {
        "benchmark": f"trivial task end to end through c0 against {armada.kind} Armada, next to the raw client",
        "armada": armada.kind,
        "load_average": load_average(),
        "runs": runs,
        "through_c0_median_s": round(statistics.median(connector_s), 3),
        "raw_client_median_s": round(statistics.median(raw_s), 3),
        "connector_vs_raw_client": round(ratio, 2),
        "through_c0_s": [round(t, 3) for t in connector_s],
        "raw_client_s": [round(t, 3) for t in raw_s],
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio <= TARGET_RATIO,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    add_armada_option(parser)
    args = parser.parse_args()
    with armada_under_test(args.armada, paused=False) as armada:
        print(json.dumps(measure(armada, args.runs), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
