"""A wide fan-out through a real `c0`: N tasks of one run (one job set), timed from the first CreateTask to
the last of their jobs QUEUED in Armada (issue 33).

A Flyte map task or fan-out is N CreateTask calls at once, and nothing of it runs until its jobs are on
Armada's queue. The jobs' states are read where Armada publishes them: a watch on the job set's events at
the server (through the counting proxy), opened before the first create; a job counts once its queued event,
or any later one, arrived. Target: none fixed; the figure is kept beside the creates figure (benchmarks/README.md).

Run: .venv/bin/python benchmarks/bench_fan_out.py [--armada real] [--tasks 2000] [--concurrent 100]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import threading
import time

import grpc
from armada_client.armada import event_pb2, event_pb2_grpc
from flyteidl2.connector import connector_pb2, service_pb2_grpc

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_under_test import add_armada_option, armada_channel, armada_under_test, load_average  # noqa: E402
from bench_connector_scale import HELD, QUEUE, concurrently, metadata, template  # noqa: E402
from c0_process import running_c0  # noqa: E402
from cpu_hogs import add_hogs_option, cpu_hogs  # noqa: E402
from raw_client_floor import REOPEN_SECONDS, cancel_job_sets  # noqa: E402

QUEUED_OR_LATER = frozenset({"queued", "leased", "pending", "running", "succeeded", "failed", "preempted"})
WAIT_FOR_QUEUED_SECONDS = 600


class QueuedJobs:
    """Watches one job set at the server; notes when each of its jobs was first seen queued (or later)."""

    def __init__(self, url: str, job_set: str, expected: int) -> None:
        self.first_seen: dict[str, float] = {}
        self.failure = ""
        self._url, self._job_set, self._expected = url, job_set, expected
        self._all_queued = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="queued-jobs", daemon=True)

    def __enter__(self) -> QueuedJobs:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def wait(self, timeout: float) -> bool:
        return self._all_queued.wait(timeout)

    def _watch(self) -> None:
        last_id = ""
        with armada_channel(self._url) as channel:
            stub = event_pb2_grpc.EventStub(channel)
            while not self._stop.is_set() and not self._all_queued.is_set():
                request = event_pb2.JobSetRequest(id=self._job_set, queue=QUEUE, from_message_id=last_id, watch=True)
                try:
                    for message in stub.GetJobSetEvents(request, timeout=WAIT_FOR_QUEUED_SECONDS):
                        last_id = message.id
                        kind = message.message.WhichOneof("events") or ""
                        if kind in QUEUED_OR_LATER:
                            job_id = getattr(message.message, kind).job_id
                            self.first_seen.setdefault(job_id, time.perf_counter())
                            if len(self.first_seen) >= self._expected:
                                self._all_queued.set()
                                return
                except grpc.RpcError as exc:  # real Armada: NOT_FOUND until the job set's first submit
                    if exc.code() != grpc.StatusCode.NOT_FOUND:
                        self.failure = f"{exc.code().name}: {exc.details()}"
                    self._stop.wait(REOPEN_SECONDS)


def fan_out(url: str, tasks: int, concurrent: int) -> dict:
    run = f"fanout-{time.strftime('%H%M%S')}"
    job_set = f"flyte-{run}"
    category_template = template("armada", *HELD)
    with tempfile.TemporaryDirectory() as tmp:
        env = {"ARMADA_URL": url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
        with running_c0(env, pathlib.Path(tmp) / "c0.log") as (channel, _pid):
            stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
            with QueuedJobs(url, job_set, tasks) as queued:

                def start(i: int) -> grpc.Future:
                    request = connector_pb2.CreateTaskRequest(
                        template=category_template,
                        output_prefix=f"s3://bench/fanout/{run}/{i}",
                        task_execution_metadata=metadata(run, f"a{i}"),
                    )
                    return stub.CreateTask.future(request, timeout=120)

                began = time.perf_counter()
                creating, calls = concurrently(start, tasks, concurrent)
                failed = sum(1 for c in calls if c.exception() is not None)
                all_queued = queued.wait(WAIT_FOR_QUEUED_SECONDS)
                last_queued = max(queued.first_seen.values(), default=began) - began
    return {
        "job_set": job_set,
        "failed_creates": failed,
        "all_queued": all_queued,
        "queued": len(queued.first_seen),
        "watch_failure": queued.failure,
        "seconds_to_last_create": round(creating, 2),
        "seconds_to_last_queued": round(last_queued, 2),
        "creates_per_second": round(tasks / creating),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--concurrent", type=int, default=100, help="CreateTask calls in flight at once")
    add_armada_option(parser)
    add_hogs_option(parser)
    args = parser.parse_args()
    load_at_start = load_average()
    with armada_under_test(args.armada, own_process=True) as armada, cpu_hogs(args.hogs):
        figures = fan_out(armada.url, args.tasks, args.concurrent)
        if armada.kind == "real":
            cancel_job_sets(armada.url, QUEUE, {figures["job_set"]})
    result = {
        "benchmark": f"a fan-out of {args.tasks} tasks through c0 to the last job QUEUED, {args.armada} Armada",
        "armada": args.armada,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "cpus": os.cpu_count(),
        "cpu_hogs": args.hogs,
        "load_average_at_start": load_at_start,
        "load_average": load_average(),
        "tasks": args.tasks,
        "concurrent_creates": args.concurrent,
        **figures,
    }
    print(json.dumps(result, indent=2))
    return 0 if figures["all_queued"] and not figures["failed_creates"] else 1


if __name__ == "__main__":
    sys.exit(main())
