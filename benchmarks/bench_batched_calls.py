"""Armada calls per delete and per ending, through a real `c0`, counted AT the embedded server.

1. Deletes: N tasks in flight (J job sets) are all deleted at once, as an abort does. Target:
   CancelJobs + GetJobStatus calls <= 2 x ceil(N/500) + J (one call per task each before).
2. Endings: N tasks (half fail) end between two rounds of gets (3 s, spread evenly); the
   status-family calls (GetJobStatus, GetJobDetails, GetJobErrors) from the moment they all
   ended until every task reads as ended. Target: <= 2 x ceil(N/500) (>= 1 per task before).
   Measured with the job sets' event streams (the default) and without (bulk refreshes only;
   there every round's refresh makes its GetJobStatus calls anyway, so the target is on the
   GetJobDetails and GetJobErrors calls the endings add).

Pods end the moment they start (`tests/support/instant_pods.py`), so endings come all at once.
Prints one JSON object. Run: .venv/bin/python benchmarks/bench_batched_calls.py
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import statistics
import sys
import tempfile
import time

import grpc
from flyteidl2.connector import connector_pb2, service_pb2_grpc

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.connector.metadata import ArmadaJobMetadata
from armada_flyte.connector.phases import TERMINAL_PHASES
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from c0_process import running_c0  # noqa: E402

from support.instant_pods import InstantPods  # noqa: E402
from support.pods import pod, submit_many  # noqa: E402

ARMADA = connector_pb2.TaskCategory(name="armada", version=0)
STATUS_FAMILY = ("GetJobStatus", "GetJobDetails", "GetJobErrors")
ENDED = {"SUCCEEDED", "FAILED", "CANCELLED"}
ROUND_SECONDS = 3.0


def instant_armada() -> EmbeddedArmada:
    """The embedded server, paused (jobs stay LEASED until `resume()`), its pods ending the moment they start."""
    return EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), paused=True, executor=InstantPods()))


def submit(armada: EmbeddedArmada, job_set: str, count: int, failing: bool = False) -> list[bytes]:
    """`count` jobs in one job set, as metadata c0 would have written for them."""
    from armada_client.client import ArmadaClient  # after armada_flyte, which aliases its google.api protos

    spec = pod(("false",) if failing else ("true",), cpu="10m", memory="16Mi")
    ids = submit_many(ArmadaClient(grpc.insecure_channel(armada.url)), "flyte", job_set, spec, count)
    now = time.time()
    return [ArmadaJobMetadata(job_id=i, job_set_id=job_set, queue="flyte", submitted_at=now).encode() for i in ids]


def calls(armada: EmbeddedArmada, methods: tuple[str, ...]) -> int:
    counts = armada.calls.counts()
    return sum(counts.get(method, 0) for method in methods)


def a_round(stub, metas: list[bytes]) -> list[int]:
    """One GetTask per task, spread evenly over a round; their phases."""
    gap, began, futures = ROUND_SECONDS / len(metas), time.monotonic(), []
    for i, meta in enumerate(metas):
        futures.append(stub.GetTask.future(connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA)))
        time.sleep(max(0.0, began + i * gap - time.monotonic()))
    return [f.result(timeout=120).resource.phase for f in futures]


def deletes(count: int, job_sets: int, workdir: pathlib.Path) -> dict:
    with instant_armada() as armada:
        metas = [m for j in range(job_sets) for m in submit(armada, f"abort-{j}", count // job_sets)]
        env = {"ARMADA_URL": armada.url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
        with running_c0(env, workdir / "c0-deletes.log") as (channel, _):
            stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
            before = armada.calls.counts()
            began = time.perf_counter()
            futures = [
                stub.DeleteTask.future(connector_pb2.DeleteTaskRequest(resource_meta=m, task_category=ARMADA))
                for m in metas
            ]
            latencies = []
            for future in futures:
                future.result(timeout=120)
                latencies.append(time.perf_counter() - began)
            took = time.perf_counter() - began
            after = armada.calls.counts()
        cancelled = sum(1 for m in metas if armada.job(ArmadaJobMetadata.decode(m).job_id).state == "CANCELLED")
    cancels = after.get("CancelJobs", 0) - before.get("CancelJobs", 0)
    statuses = after.get("GetJobStatus", 0) - before.get("GetJobStatus", 0)
    target = 2 * math.ceil(len(metas) / 500) + job_sets
    return {
        "tasks": len(metas),
        "job_sets": job_sets,
        "cancel_jobs_calls": cancels,
        "get_job_status_calls": statuses,
        "target": target,
        "meets_target": cancels + statuses <= target and cancelled == len(metas),
        "cancelled": cancelled,
        "all_answered_seconds": round(took, 2),
        "delete_p50_seconds": round(statistics.median(latencies), 3),
    }


def endings(count: int, streams: bool, workdir: pathlib.Path) -> dict:
    with instant_armada() as armada:
        metas = submit(armada, "ends-ok", count // 2) + submit(armada, "ends-bad", count - count // 2, failing=True)
        ids = [ArmadaJobMetadata.decode(m).job_id for m in metas]
        env = {
            "ARMADA_URL": armada.url,
            "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
            "ARMADA_FLYTE_STATUS_EVENT_STREAMS": "true" if streams else "false",
        }
        with running_c0(env, workdir / f"c0-endings-{streams}.log") as (channel, _):
            stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
            a_round(stub, metas)  # in flight: c0 learns the jobs (and follows their job sets)
            armada.resume()
            deadline = time.monotonic() + 120
            while not all(armada.job(i).state in ENDED for i in ids):
                if time.monotonic() > deadline:
                    raise RuntimeError("the jobs did not end within 120 s")
                time.sleep(0.05)
            before = calls(armada, STATUS_FAMILY)
            by_method_before = armada.calls.counts()
            rounds = 0
            while True:
                rounds += 1
                phases = a_round(stub, metas)
                if all(p in TERMINAL_PHASES for p in phases) or rounds == 10:
                    break
            after = armada.calls.counts()
            spent = calls(armada, STATUS_FAMILY) - before
    target = 2 * math.ceil(count / 500)
    by_method = {m: after.get(m, 0) - by_method_before.get(m, 0) for m in STATUS_FAMILY}
    counted = spent if streams else spent - by_method["GetJobStatus"]
    return {
        "tasks": count,
        "event_streams": streams,
        "rounds_until_all_read_ended": rounds,
        "status_family_calls": spent,
        "by_method": by_method,
        "target": target,
        "target_counts": "status-family calls" if streams else "GetJobDetails + GetJobErrors calls",
        "meets_target": counted <= target and all(p in TERMINAL_PHASES for p in phases),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--job-sets", type=int, default=2, help="job sets the deleted tasks are in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        result = {
            "deletes": deletes(args.tasks, args.job_sets, workdir),
            "endings_streamed": endings(args.tasks, True, workdir),
            "endings_bulk": endings(args.tasks, False, workdir),
            "load_average": [round(x, 1) for x in os.getloadavg()],
        }
    result["meets_targets"] = all(result[k]["meets_target"] for k in ("deletes", "endings_streamed", "endings_bulk"))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
