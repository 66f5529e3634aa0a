"""The embedded Armada server with a big backlog, run as users run it (`armada-flyte dev`, its own process).

1. Submit 100,000 small jobs (requests of 100 items) to a cluster of 4 nodes where they all fit,
   then to a cluster of 4 nodes that is already full, so all of them queue. Target: the full
   cluster accepts them all within 1.5x of the all-fit time.
2. While the 100,000 queue up, a prober in a process of its own calls Jobs.GetJobStatus for 500
   ids without pause. Target: p99 under 5 ms (on the full cluster). The prober runs in the all-fit
   round too, so the ratio compares the backlog's cost alone, not the prober's. `--probe-every-ms N`
   paces it instead (one call started every N ms), so code that answers faster isn't also asked more.
3. Also reported: the server's resident memory per queued job and its longest cyclic-GC pause.

The server is `armada-flyte dev --paused` (nothing runs) with its SQLite state in a temporary
folder (`--ephemeral` keeps it in memory instead); the submitting client is this process. Every
call goes over gRPC on 127.0.0.1, so client and server don't share a GIL. Prints one JSON object.
Run: .venv/bin/python benchmarks/bench_embedded_backlog.py [--jobs 100000] [--ephemeral]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Iterator

import grpc
import yaml
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)

PER_REQUEST = 100
HERE = pathlib.Path(__file__).parent


def cluster(cpu_per_node: str) -> dict:
    group = {"name": "amd64", "nodes": 4, "labels": {"kubernetes.io/arch": "amd64"}, "taints": []}
    group["allocatable"] = {"cpu": cpu_per_node, "memory": "100000Gi"}
    return {"node_sets": [group]}


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


def rss_mb(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


@contextlib.contextmanager
def dev_server(folder: pathlib.Path, cpu_per_node: str, ephemeral: bool) -> Iterator[tuple[str, int, pathlib.Path]]:
    """`armada-flyte dev --paused` on a free port; yields its address, its pid and where its GC report lands."""
    cluster_file = folder / "cluster.yaml"
    cluster_file.write_text(yaml.safe_dump(cluster(cpu_per_node)))
    gc_report = folder / "gc.json"
    state = ["--ephemeral"] if ephemeral else ["--state-dir", str(folder / "state")]
    command = [sys.executable, str(HERE / "dev_server.py"), str(gc_report), "dev", "--paused", "--port", "0"]
    command += ["--no-blob-store", "--cluster", str(cluster_file), *state]
    with (folder / "server.log").open("w") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            url = ""
            assert process.stdout is not None
            for line in process.stdout:
                if "listening on " in line:
                    url = line.split("listening on ")[1].split()[0]
                if line.startswith("Press Ctrl-C"):
                    break
            if not url:
                raise RuntimeError(f"armada-flyte dev did not start; see {folder / 'server.log'}")
            yield url, process.pid, gc_report
        finally:
            process.terminate()
            process.wait(timeout=60)


def probe(
    url: str, ids: list[str], stop: multiprocessing.synchronize.Event, out: multiprocessing.Queue, every: float
) -> None:
    """Call GetJobStatus for `ids` until `stop`, starting one every `every` seconds (0: without pause);
    put the latencies (ms) on `out`."""
    prober = ArmadaClient(grpc.insecure_channel(url))
    prober.get_job_status(ids)  # connected before the clock starts
    latencies = []
    out.put("ready")
    while not stop.is_set():
        began = time.perf_counter()
        prober.get_job_status(ids)
        latencies.append((time.perf_counter() - began) * 1000)
        if every:
            time.sleep(max(0.0, began + every - time.perf_counter()))
    out.put(latencies)


def submit_all(url: str, pid: int, jobs: int, cpu: str, probe_every: float, with_probe: bool = True) -> dict:
    client = ArmadaClient(grpc.insecure_channel(url))
    request = items(client, cpu)
    first = [i.job_id for i in client.submit_jobs("flyte", "backlog", request).job_response_items]
    spawn = multiprocessing.get_context("spawn")
    stop, out = spawn.Event(), spawn.Queue()
    prober = spawn.Process(target=probe, args=(url, (first * 5)[:500], stop, out, probe_every), daemon=True)
    if with_probe:
        prober.start()
        out.get(timeout=120)
    memory_before = rss_mb(pid)
    began = time.perf_counter()
    ids = list(first)
    for _ in range(jobs // PER_REQUEST - 1):
        ids += [i.job_id for i in client.submit_jobs("flyte", "backlog", request).job_response_items]
    seconds = time.perf_counter() - began
    latencies: list[float] = []
    if with_probe:
        stop.set()
        latencies = out.get(timeout=120)
        prober.join()
    states = [
        s for at in range(0, len(ids), 500) for s in client.get_job_status(ids[at : at + 500]).job_states.values()
    ]
    result = {
        "submit_seconds": round(seconds, 2),
        "accepted": len(set(ids)),
        "queued": states.count(0),
        "rss_added_mb": round(rss_mb(pid) - memory_before, 1),
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
    parser.add_argument("--no-probe-all-fit", action="store_true", help="no prober in the all-fit round")
    parser.add_argument("--ephemeral", action="store_true", help="the server keeps its state in memory, not SQLite")
    parser.add_argument(
        "--probe-every-ms", type=float, default=0.0, help="start a status call this often (default 0: without pause)"
    )
    args = parser.parse_args()
    every = args.probe_every_ms / 1000

    with tempfile.TemporaryDirectory(prefix="bench-backlog-") as tmp:
        full_dir, fit_dir = pathlib.Path(tmp, "full"), pathlib.Path(tmp, "fit")
        full_dir.mkdir()
        fit_dir.mkdir()
        with dev_server(full_dir, "1", args.ephemeral) as (url, pid, gc_report):
            full = submit_all(url, pid, args.jobs, "1", every)
        gc_pauses = json.loads(gc_report.read_text())
        with dev_server(fit_dir, "100000", args.ephemeral) as (url, pid, _):
            all_fit = submit_all(url, pid, args.jobs, "10m", every, with_probe=not args.no_probe_all_fit)

    ratio = full["submit_seconds"] / all_fit["submit_seconds"]
    result = {
        "benchmark": "embedded Armada server (armada-flyte dev, own process) with a 100k backlog",
        "cpus": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "jobs": args.jobs,
        "state": "memory" if args.ephemeral else "sqlite",
        "probe_every_ms": args.probe_every_ms,
        "all_fit": all_fit,
        "full_cluster": full,
        "full_vs_all_fit": round(ratio, 2),
        "rss_per_queued_job_bytes": round(full["rss_added_mb"] * 1024 * 1024 / max(full["queued"], 1)),
        "longest_gc_pause_ms": gc_pauses["longest_ms"],
        "longest_gc_pause_ms_by_generation": gc_pauses["by_generation"],
        "gc_collections": gc_pauses["collections"],
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
