"""c0 scaled out: N real c0 processes, one client balancing each call over them as Flyte's backend does.

The client's channel is the backend's: one target naming every replica (`ipv4:` with N addresses,
where the backend resolves `dns:///` to a headless Service's pods) and the service config of
deploy/flyte/connector-routing.yaml (round_robin). The embedded Armada server runs paused in a
process of its own; its status RPCs are counted there, and each c0's GetTask calls in c0 (its
Prometheus metrics), which shows the spread.

The tasks are created once. Each measurement then starts fresh replicas (c0 keeps no state of its
own, so new processes answer the same tasks; a round past the limit leaves a c0 slow for the rounds
after it) and runs a round that asks each task once (GetTask spread over 3 s, as the backend's
resync does), then the measured round. A call fails if gRPC refuses it (c0's server past its
pending-call limit answers CANCELLED) or the task reads FAILED. `--find-limit LOW HIGH` bisects
the largest in-flight count whose round meets the target: no failed call and GetTask p99 < 50 ms.
Target: 10,000 in flight through 2 replicas, 0 failed, GetTask p99 < 50 ms.

Run: .venv/bin/python benchmarks/bench_connector_replicas.py --replicas 2 --in-flight 10000
     .venv/bin/python benchmarks/bench_connector_replicas.py --replicas 1 --find-limit 5000 10000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import sys
import tempfile
import time
from typing import Any, Iterator

import grpc
import yaml
from flyteidl2.connector import service_pb2_grpc

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_process import armada_process  # noqa: E402
from bench_connector_scale import cpu_seconds, creates, status_round  # noqa: E402
from c0_process import C0, C0_DEFAULT_WORKERS, started_c0  # noqa: E402

ROUTING = pathlib.Path(__file__).parents[1] / "deploy" / "flyte" / "connector-routing.yaml"
P99_TARGET_MS = 50


def backend_service_config() -> str:
    """The gRPC service config Flyte's backend dials the connector with, as deploy/ ships it."""
    routing = yaml.safe_load(ROUTING.read_text())
    return routing["plugins"]["connector-service"]["connectors"]["armada"]["defaultServiceConfig"]


def balanced_channel(replicas: list[C0]) -> grpc.Channel:
    """One channel over every replica, balancing per call (a headless Service's DNS answer, as addresses)."""
    target = "ipv4:" + ",".join(c0.address for c0 in replicas)
    options = [("grpc.service_config", backend_service_config()), ("grpc.max_receive_message_length", 64 << 20)]
    return grpc.insecure_channel(target, options=options)


def load_average() -> float:
    return round(os.getloadavg()[0], 1)


@contextlib.contextmanager
def replica_set(env: dict[str, str], folder: pathlib.Path, count: int, workers: int) -> Iterator[tuple[list[C0], Any]]:
    """`count` fresh c0 processes and a connector stub over a channel balancing per call across them."""
    with contextlib.ExitStack() as stack:
        replicas = [
            stack.enter_context(started_c0(env, folder / f"c0-{time.monotonic_ns()}.log", workers))
            for _ in range(count)
        ]
        channel = stack.enter_context(balanced_channel(replicas))
        yield replicas, service_pb2_grpc.AsyncConnectorServiceStub(channel)


def measured_round(stub, armada_calls, replicas: list[C0], metas: list[bytes]) -> dict:
    """The round before (each job's first ask), then the measured one with the GetTask calls each replica answered."""
    status_round(stub, armada_calls, metas)
    answered_before = [c0.answered("get") for c0 in replicas]
    cpu_before = [cpu_seconds(c0.pid) for c0 in replicas]
    load_before = load_average()
    client_before = time.process_time()
    result = status_round(stub, armada_calls, metas)
    client_cpu = time.process_time() - client_before
    answered = [c0.answered("get") - n for c0, n in zip(replicas, answered_before)]
    result["get_task_answered_per_replica"] = answered
    # What a call costs a replica whatever the machine's load: its capacity is about 1,000 / this, per CPU.
    result["c0_cpu_ms_per_get_task"] = [
        round((cpu_seconds(c0.pid) - before) * 1000 / max(n, 1), 3)
        for c0, before, n in zip(replicas, cpu_before, answered)
    ]
    result["client_cpu_ms_per_get_task"] = round(client_cpu * 1000 / len(metas), 3)
    result["load_average"] = [load_before, load_average()]
    result["ok"] = not result["failed_calls"] and result["get_task_p99_ms"] < P99_TARGET_MS
    return result


def largest_within_target(measure, low: int, high: int, steps: int) -> tuple[int | None, list[dict]]:
    """Bisect [low, high] for the largest in-flight count whose round is `ok` (no failed call, p99 under the
    target; `steps` probes at most)."""
    probes, best = [], None
    for _ in range(steps):
        if high - low < 250:
            break
        middle = (low + high) // 2 if probes else high
        probe = measure(middle)
        probes.append(probe)
        if not probe["ok"]:
            high = middle
        else:
            best, low = middle, middle
            if middle == high:
                break
    return best, probes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2, help="c0 processes behind the balancing client")
    parser.add_argument("--in-flight", type=int, nargs="*", default=[10_000], help="tasks in flight, one round each")
    parser.add_argument("--find-limit", type=int, nargs=2, metavar=("LOW", "HIGH"), help="bisect the in-flight limit")
    parser.add_argument("--steps", type=int, default=4, help="probes of --find-limit at most")
    parser.add_argument("--workers", type=int, default=C0_DEFAULT_WORKERS, help="c0's --worker (its thread pool)")
    args = parser.parse_args()
    most = max([*args.in_flight, *(args.find_limit or [])])

    with tempfile.TemporaryDirectory() as tmp, armada_process() as (url, armada_calls):
        folder = pathlib.Path(tmp)
        env = {"ARMADA_URL": url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
        created_at = time.perf_counter()
        with replica_set(env, folder, args.replicas, args.workers) as (replicas, stub):
            rate, metas, failed_creates = creates(stub, "armada", 0, most)
            creates_per_replica = [c0.answered("create") for c0 in replicas]

        def measure(in_flight: int) -> dict:
            with replica_set(env, folder, args.replicas, args.workers) as (fresh, fresh_stub):
                return measured_round(fresh_stub, armada_calls, fresh, metas[:in_flight])

        rounds = {f"round_{n}": measure(n) for n in args.in_flight}
        result: dict = {
            "benchmark": "c0 replicas behind a client balancing per call (round_robin), embedded Armada",
            "cpus": os.cpu_count(),
            "replicas": args.replicas,
            "c0_workers": args.workers,
            "service_config": backend_service_config(),
            "created": len(metas),
            "failed_creates": failed_creates,
            "creates_per_second": round(rate),
            "creates_per_replica": creates_per_replica,
            "create_seconds": round(time.perf_counter() - created_at, 1),
            **rounds,
        }
        if args.find_limit:
            limit, probes = largest_within_target(measure, *args.find_limit, args.steps)
            result["limit_within_target"] = limit
            result["limit_probes"] = probes
        result["target"] = f"10,000 in flight, 2 replicas: 0 failed, GetTask p99 < {P99_TARGET_MS} ms"
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
