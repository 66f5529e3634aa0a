"""The embedded Armada server with a big backlog, through its gRPC API.

1. Submit 100,000 small jobs (requests of 100 items) to a cluster of 4 nodes where they all fit,
   then to a cluster of 4 nodes that is already full, so all of them queue. Target: the full
   cluster accepts them all within 1.5x of the all-fit time.
2. While the 100,000 queue up, a second client calls Jobs.GetJobStatus for 500 ids without
   pause. Target: p99 under 5 ms.
3. Also reported: resident memory per queued job and the longest cyclic-GC pause.

The executor is paused, so nothing runs. Prints one JSON object.
Run: .venv/bin/python benchmarks/bench_embedded_backlog.py [--jobs 100000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import statistics
import sys
import threading
import time

import grpc
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.embedded import Cluster, EmbeddedArmada

PER_REQUEST = 100


def cluster(cpu_per_node: str) -> Cluster:
    group = {"name": "amd64", "nodes": 4, "labels": {"kubernetes.io/arch": "amd64"}, "taints": []}
    group["allocatable"] = {"cpu": cpu_per_node, "memory": "100000Gi"}
    return Cluster.from_mapping({"node_groups": [group]})


def items(client: ArmadaClient, cpu: str) -> list:
    quantity = {"cpu": resource.Quantity(string=cpu), "memory": resource.Quantity(string="1Mi")}
    container = core.Container(
        name="main",
        image="busybox",
        command=["true"],
        resources=core.ResourceRequirements(requests=quantity, limits=quantity),
    )
    pod = core.PodSpec(containers=[container], restartPolicy="Never")
    return [client.create_job_request_item(pod_spec=pod, namespace="default") for _ in range(PER_REQUEST)]


def rss_mb() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class GcPauses:
    """The duration of every cyclic collection while active."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((time.perf_counter() - self._started) * 1000)


def submit_all(armada: EmbeddedArmada, jobs: int, cpu: str, probe: bool) -> dict:
    client = ArmadaClient(grpc.insecure_channel(armada.url))
    request = items(client, cpu)
    first = [i.job_id for i in client.submit_jobs("flyte", "backlog", request).job_response_items]
    latencies: list[float] = []
    stop = threading.Event()

    def poll_status() -> None:
        prober = ArmadaClient(grpc.insecure_channel(armada.url))
        ids = (first * 5)[:500]
        while not stop.is_set():
            began = time.perf_counter()
            prober.get_job_status(ids)
            latencies.append((time.perf_counter() - began) * 1000)

    prober = threading.Thread(target=poll_status, daemon=True)
    if probe:
        prober.start()
    memory_before = rss_mb()
    began = time.perf_counter()
    ids = list(first)
    for _ in range(jobs // PER_REQUEST - 1):
        ids += [i.job_id for i in client.submit_jobs("flyte", "backlog", request).job_response_items]
    seconds = time.perf_counter() - began
    stop.set()
    if probe:
        prober.join()
    states = [
        s for at in range(0, len(ids), 500) for s in client.get_job_status(ids[at : at + 500]).job_states.values()
    ]
    result = {
        "submit_seconds": round(seconds, 2),
        "accepted": len(set(ids)),
        "queued": states.count(0),
        "rss_added_mb": round(rss_mb() - memory_before, 1),
    }
    if latencies:
        latencies.sort()
        result["get_job_status_calls"] = len(latencies)
        result["get_job_status_p50_ms"] = round(statistics.median(latencies), 2)
        result["get_job_status_p99_ms"] = round(latencies[int(len(latencies) * 0.99) - 1], 2)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()

    pauses = GcPauses()
    gc.callbacks.append(pauses)
    with EmbeddedArmada(port=0, queues=("flyte",), cluster=cluster("1"), paused=True) as armada:
        full = submit_all(armada, args.jobs, "1", probe=True)
    gc.callbacks.remove(pauses)
    with EmbeddedArmada(port=0, queues=("flyte",), cluster=cluster("100000"), paused=True) as armada:
        all_fit = submit_all(armada, args.jobs, "10m", probe=False)

    ratio = full["submit_seconds"] / all_fit["submit_seconds"]
    result = {
        "benchmark": "embedded Armada server with a 100k backlog",
        "cpus": os.cpu_count(),
        "jobs": args.jobs,
        "all_fit": all_fit,
        "full_cluster": full,
        "full_vs_all_fit": round(ratio, 2),
        "rss_per_queued_job_bytes": round(full["rss_added_mb"] * 1024 * 1024 / max(full["queued"], 1)),
        "longest_gc_pause_ms": round(max(pauses.pauses, default=0.0), 1),
        "targets": {"full_vs_all_fit": "<= 1.5", "get_job_status_p99_ms": "< 5"},
    }
    result["meets_targets"] = {
        "full_vs_all_fit": ratio <= 1.5,
        "get_job_status_p99": full.get("get_job_status_p99_ms", 99.0) < 5,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
