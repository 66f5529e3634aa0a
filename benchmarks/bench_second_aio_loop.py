"""What a second grpc.aio event loop in c0 costs the calls c0 serves (issue 33).

grpcio (1.84) has one completion-queue poller per process; every asyncio loop that used grpc.aio is bound to
it, and one event wakes all of them: each watches the same wake-up socket, and the one that reads it hands
events of another loop over to that loop (grpc's `_cygrpc/aio/completion_queue.pyx.pxi`, PollerCompletionQueue
and bind_loop). The armada connector's status view runs its own loop in a thread of c0, so beside it every call
c0 serves, for any connector, costs more. This sets two c0 side by side, the no-op connector's creates in each,
rounds alternating: one c0 as it starts, and one where a second loop holds an idle grpc.aio channel (task type
`noop_second_loop`, what the view's thread adds). Both figures are the no-op's, so they differ only by the loop.
It also means the creates benchmark's no-op, measured in the same c0 as the armada connector, pays for the
view's loop too. Prints one JSON object. Run: .venv/bin/python benchmarks/bench_second_aio_loop.py
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import statistics
import sys
import tempfile
import time

import grpc
from flyteidl2.connector import service_pb2_grpc

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_under_test import load_average  # noqa: E402
from bench_connector_scale import cpu_seconds, creates, settle  # noqa: E402
from c0_process import started_c0  # noqa: E402


def compare(count: int, rounds: int) -> dict:
    """The no-op's creates/s and c0 CPU per create in a c0 without, and one with, a second grpc.aio loop."""
    load_at_start = load_average()
    figures: dict[str, dict[str, list[float]]] = {"one_loop": {}, "second_loop": {}}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        stubs, pids = {}, {}
        for name in figures:
            c0 = stack.enter_context(started_c0({}, pathlib.Path(tmp) / f"{name}.log"))
            channel = stack.enter_context(grpc.insecure_channel(c0.address))
            stubs[name], pids[name] = service_pb2_grpc.AsyncConnectorServiceStub(channel), c0.pid
        creates(stubs["second_loop"], "noop_second_loop", 0, 1)  # binds the second loop
        for stub in stubs.values():
            creates(stub, "noop", 1, 200)  # warm
        first = 201
        for _ in range(rounds):
            for name, seen in figures.items():
                settle(pids[name], 0.5)
                before = cpu_seconds(pids[name])
                rate, _, failed = creates(stubs[name], "noop", first, count)
                seen.setdefault("rate", []).append(rate)
                seen.setdefault("c0_cpu_ms", []).append((cpu_seconds(pids[name]) - before) * 1000 / count)
                seen.setdefault("failed", []).append(failed)
                first += count
    one, two = figures["one_loop"], figures["second_loop"]
    return {
        "benchmark": "the no-op connector's creates in c0, without and with a second grpc.aio loop (medians)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_at_start": load_at_start,
        "load_average": load_average(),
        "creates": count,
        "rounds": rounds,
        "creates_per_second": {
            "one_loop": round(statistics.median(one["rate"])),
            "second_loop": round(statistics.median(two["rate"])),
        },
        "second_loop_vs_one": round(statistics.median([b / a for a, b in zip(one["rate"], two["rate"])]), 2),
        "c0_cpu_ms_per_create": {
            "one_loop": round(statistics.median(one["c0_cpu_ms"]), 3),
            "second_loop": round(statistics.median(two["c0_cpu_ms"]), 3),
        },
        "second_loop_costs_ms_per_create": round(
            statistics.median([b - a for a, b in zip(one["c0_cpu_ms"], two["c0_cpu_ms"])]), 3
        ),
        "rounds_detail": figures,
        "failed_creates": sum(one["failed"]) + sum(two["failed"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(compare(args.creates, args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
