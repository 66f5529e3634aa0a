"""Benchmark the embedded Armada server through its gRPC API, as a client would see it.

1. Submit 10,000 small jobs in requests of 100 items with the executor paused, and time from
   the first submit until every job is scheduled (LEASED). Target: at most 5 s.
2. Call Jobs.GetJobStatus for 500 ids repeatedly. Target: p50 under 10 ms.

Prints one JSON object. Run: .venv/bin/python benchmarks/bench_embedded_server.py
(`--state-dir DIR` measures the persistent mode `armada-flyte dev` uses; give it an empty folder).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import grpc
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.embedded import Cluster, EmbeddedArmada, EmbeddedConfig

LEASED = 7
STATUS_BATCH = 500
ARM64_TOLERATION = core.Toleration(key="kubernetes.io/arch", operator="Equal", value="arm64", effect="NoSchedule")


def bench_cluster(nodes_per_group: int) -> Cluster:
    """The default cluster's two groups, with more nodes, so 10,000 jobs of 10m cpu all fit."""

    def group(arch: str, taints: list) -> dict:
        labels = {"kubernetes.io/arch": arch}
        allocatable = {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "2Ti"}  # Armada gives each pod 8Gi
        return {"name": arch, "nodes": nodes_per_group, "labels": labels, "taints": taints, "allocatable": allocatable}

    arm64_taint = {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}
    return Cluster.from_mapping({"node_sets": [group("amd64", []), group("arm64", [arm64_taint])]})


def job_items(client: ArmadaClient, count: int, arch: str) -> list:
    """`count` request items of 10m cpu and 1Mi memory pinned to `arch` (with the toleration arm64 needs)."""
    quantity = {"cpu": resource.Quantity(string="10m"), "memory": resource.Quantity(string="1Mi")}
    container = core.Container(
        name="main",
        image="busybox",
        command=["true"],
        resources=core.ResourceRequirements(requests=quantity, limits=quantity),
    )
    pod = core.PodSpec(
        containers=[container],
        restartPolicy="Never",
        nodeSelector={"kubernetes.io/arch": arch},
        tolerations=[ARM64_TOLERATION] if arch == "arm64" else [],
    )
    return [client.create_job_request_item(pod_spec=pod, namespace="default") for _ in range(count)]


def wait_all_leased(client: ArmadaClient, job_ids: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(job_ids)
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} jobs not scheduled after {timeout} s")
        still = []
        for start in range(0, len(pending), STATUS_BATCH):
            batch = pending[start : start + STATUS_BATCH]
            states = client.get_job_status(batch).job_states
            still += [i for i in batch if states[i] != LEASED]
        pending = still
        if pending:
            time.sleep(0.01)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--per-request", type=int, default=100)
    parser.add_argument("--status-calls", type=int, default=200)
    parser.add_argument(
        "--state-dir", help="keep the server's state in SQLite here (as `armada-flyte dev` does); default in memory"
    )
    args = parser.parse_args()

    cluster = bench_cluster(nodes_per_group=20)
    with EmbeddedArmada(EmbeddedConfig(cluster=cluster, paused=True, state_dir=args.state_dir)) as armada:
        client = ArmadaClient(grpc.insecure_channel(armada.url))
        count = args.jobs // args.per_request
        requests = [job_items(client, args.per_request, ("amd64", "arm64")[i % 2]) for i in range(count)]
        job_ids: list[str] = []
        started = time.perf_counter()
        for items in requests:
            response = client.submit_jobs("flyte", "bench", items)
            job_ids += [item.job_id for item in response.job_response_items]
        submitted = time.perf_counter() - started
        wait_all_leased(client, job_ids, timeout=60)
        scheduled = time.perf_counter() - started

        sample = job_ids[:STATUS_BATCH]
        latencies = []
        for _ in range(args.status_calls):
            t0 = time.perf_counter()
            client.get_job_status(sample)
            latencies.append((time.perf_counter() - t0) * 1000)

    result = {
        "cpus": os.cpu_count(),
        "state": "sqlite" if args.state_dir else "memory",
        "nodes": len(armada.cluster.nodes),
        "jobs": len(job_ids),
        "items_per_request": args.per_request,
        "submit_seconds": round(submitted, 3),
        "all_scheduled_seconds": round(scheduled, 3),
        "scheduled_target_seconds": 5.0,
        "get_job_status_ids": len(sample),
        "get_job_status_p50_ms": round(statistics.median(latencies), 2),
        "get_job_status_p95_ms": round(sorted(latencies)[int(len(latencies) * 0.95) - 1], 2),
        "get_job_status_target_p50_ms": 10.0,
    }
    result["meets_targets"] = result["all_scheduled_seconds"] <= 5.0 and result["get_job_status_p50_ms"] < 10.0
    print(json.dumps(result, indent=2))
    return 0 if result["meets_targets"] else 1


if __name__ == "__main__":
    sys.exit(main())
