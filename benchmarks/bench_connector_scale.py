"""The connector at scale, through a real `c0` over gRPC, against the embedded Armada server or real Armada.

`--armada embedded` (default) starts the embedded server (paused); `--armada real` uses the bed in
ARMADA_URL (`scripts/real-armada.sh up`, with our executor; the jobs ask for 3 CPUs, so most stay
queued). RPCs are counted at a gRPC proxy in front of either server (`counting_proxy.py`), never in
the client.

1. Creates per second, 100 concurrent CreateTask calls, for the armada connector and, through
   the same c0 in the same run, a no-op connector (c0's own cost), with the CPU each create cost c0
   and this process (its client and, on `--armada embedded`, the server). The floor: the raw
   `armada_client` sending the SubmitJobs requests the connector sent (same jobs, same batches, as many
   in flight) to the same server, right after. Targets (issue 33): the connector at >= 0.75x the
   no-op's creates per second on the embedded server (on real Armada >= 0.65x the lower of the no-op's
   and the raw client's), its own c0 CPU (c0's minus the no-op's) under 0.27 ms a create, and this
   process under 0.7 ms a create (embedded).
2. Status RPCs per 3 s round: N tasks in flight, each asked once (GetTask) at a time spread
   evenly over the round, as a Flyte backend's resync does. Targets: <= 3 GetJobStatus calls at
   N = 1,000 and <= 12 at N = 5,000, and no call fails; GetTask p99 at N = 1,000 under 5 ms.
3. c0's memory with 10,000 tasks in flight, above its warmed-up size. Target: < +30 MB.

The executor is paused (embedded), or two jobs run at a time (real), so jobs stay in flight for the
whole run; on real Armada the benchmark cancels its job sets at the end.
Prints one JSON object. Run: .venv/bin/python benchmarks/bench_connector_scale.py [--armada real]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time
from typing import Callable

import grpc
from flyteidl2.connector import connector_pb2, service_pb2_grpc
from flyteidl2.core import tasks_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.connector.config.settings_groups import Limits
from armada_flyte.spec import SubmissionSpec
from armada_flyte.task.plugin import ArmadaConfig

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_under_test import ArmadaUnderTest, add_armada_option, armada_under_test, load_average  # noqa: E402
from c0_process import rss_mb, running_c0  # noqa: E402
from cpu_hogs import add_hogs_option, cpu_hogs  # noqa: E402
from raw_client_floor import cancel_job_sets, job_set_of, resubmit  # noqa: E402

ARMADA = connector_pb2.TaskCategory(name="armada", version=0)
NOOP = connector_pb2.TaskCategory(name="noop", version=0)
TASKS_PER_RUN = 100
CONCURRENT = 100
ROUND_SECONDS = 3.0
QUEUE = "flyte"
VS_NOOP_TARGET = 0.75
"""Creates per second against the no-op connector's, embedded server."""
VS_FLOOR_TARGET_REAL = 0.65
"""On real Armada: against the lower of the no-op's and the raw client's (Armada itself may be the ceiling)."""
OWN_C0_CPU_TARGET_MS = 0.27
"""The connector's own c0 CPU a create: c0's minus the no-op's, same run."""
BENCH_CPU_TARGET_MS = 0.7
"""This process's CPU a create (the client and the embedded server)."""
RUN_STAMP = time.strftime("%H%M%S")
"""In the run names: a real Armada kept from an earlier run answers a repeated task from its deduplication."""


HELD = ("3", ("sleep", "600"))
"""The scale runs' jobs: 3 CPUs and a long sleep, so on a server whose executor runs pods (real Armada's
bed) two run at a time and the rest stay queued: in flight, as the rounds need them (a job that ended
leaves the connector's status view once read, so asking for it again is a GetJobStatus)."""


def template(task_type: str, cpu: str = "10m", command: tuple[str, ...] = ("true",)) -> tasks_pb2.TaskTemplate:
    t = tasks_pb2.TaskTemplate(type=task_type)
    t.id.name = "bench.task"
    t.container.image = "python:3.11-slim"
    t.container.command.extend(command)
    t.container.resources.limits.add(name=tasks_pb2.Resources.CPU, value=cpu)
    t.container.resources.limits.add(name=tasks_pb2.Resources.MEMORY, value="16Mi")
    t.custom.update(SubmissionSpec.from_config(ArmadaConfig(), {}).to_custom())
    return t


def metadata(run: str, action: str) -> connector_pb2.TaskExecutionMetadata:
    meta = connector_pb2.TaskExecutionMetadata()
    tid = meta.task_execution_id
    tid.task_id.project, tid.task_id.domain, tid.task_id.name = "proj", "dev", "bench.task"
    tid.node_execution_id.node_id = action
    execution = tid.node_execution_id.execution_id
    execution.project, execution.domain, execution.name = "proj", "dev", run
    return meta


def concurrently(start: Callable[[int], grpc.Future], count: int, limit: int) -> tuple[float, list[grpc.Future]]:
    """`count` calls with at most `limit` in flight; returns the wall time and the finished calls."""
    slots = threading.Semaphore(limit)
    calls = []
    began = time.perf_counter()
    for i in range(count):
        slots.acquire()
        call = start(i)
        call.add_done_callback(lambda _: slots.release())
        calls.append(call)
    for call in calls:
        call.exception()
    return time.perf_counter() - began, calls


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system), from /proc: what a create costs, whatever the load."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


STREAMS_START_AFTER = Limits().status_refresh_seconds + 1.0
"""A job set's event stream starts a refresh period (`status_refresh_seconds`, c0's default here) after its last
create; with a second more, its catch-up has begun when `settle` starts watching for c0 to go quiet."""


def settle(
    pid: int, at_least: float, quiet: float = 0.03, window: float = 1.0, bound: float = 60.0
) -> tuple[float, bool]:
    """Wait `at_least` seconds, then until c0 used under `quiet` of a CPU over the last `window` seconds (at most
    `bound`); returns the CPU seconds c0 used meanwhile and whether it went quiet. Between rounds, so what one
    round left running (a job set's stream catching up) is counted apart, never in the next round's figures."""
    began, start = time.monotonic(), cpu_seconds(pid)
    samples = [(began, start)]
    while time.monotonic() - began < bound:
        time.sleep(0.1)
        now, used = time.monotonic(), cpu_seconds(pid)
        samples.append((now, used))
        samples = [(t, c) for t, c in samples if now - t <= window + 0.15]
        oldest_t, oldest_c = samples[0]
        if now - began >= at_least and now - oldest_t >= window and (used - oldest_c) / (now - oldest_t) < quiet:
            return used - start, True
    return cpu_seconds(pid) - start, False


def creates(stub, task_type: str, first: int, count: int) -> tuple[float, list[bytes], int]:
    """Create `count` tasks (runs of 100); returns creates/s, the resource metas, and how many failed."""
    category_template = template(task_type, *HELD)

    def start(i: int) -> grpc.Future:
        n = first + i
        request = connector_pb2.CreateTaskRequest(
            template=category_template,
            output_prefix=f"s3://bench/raw/{n}",
            task_execution_metadata=metadata(f"run-{RUN_STAMP}-{n // TASKS_PER_RUN}", f"a{n}"),
        )
        return stub.CreateTask.future(request, timeout=60)

    seconds, calls = concurrently(start, count, CONCURRENT)
    failed = [c for c in calls if c.exception() is not None]
    metas = [c.result().resource_meta for c in calls if c.exception() is None]
    return count / seconds, metas, len(failed)


def status_round(stub, armada_calls: Callable[[], dict[str, int]], metas: list[bytes]) -> dict:
    """Ask for every task once, the asks spread evenly over one round; count what reached Armada
    (`armada_calls` gives the server's calls so far, by method)."""
    before = armada_calls()
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    done = threading.Event()
    remaining = [len(metas)]

    def finished(call: grpc.Future, sent: float) -> None:
        elapsed = (time.perf_counter() - sent) * 1000
        with lock:
            if call.exception() is not None:
                failures.append(f"{call.code().name}: {call.details()}")
            elif call.result().resource.phase in (TaskExecution.FAILED, TaskExecution.ABORTED):
                failures.append(call.result().resource.message)
            latencies.append(elapsed)
            remaining[0] -= 1
            if not remaining[0]:
                done.set()

    gap = ROUND_SECONDS / len(metas)
    began = time.perf_counter()
    for i, meta in enumerate(metas):
        delay = began + i * gap - time.perf_counter()
        if delay > 0.002:
            time.sleep(delay)
        sent = time.perf_counter()
        call = stub.GetTask.future(connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA), timeout=60)
        call.add_done_callback(lambda c, sent=sent: finished(c, sent))
    if not done.wait(120):  # every call has its own 60 s deadline, so this only trips on a lost callback
        raise RuntimeError(f"{remaining[0]} of {len(metas)} GetTask calls unanswered after 120 s")
    took = time.perf_counter() - began
    after = armada_calls()
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}
    latencies.sort()
    return {
        "in_flight": len(metas),
        "round_seconds": round(took, 2),
        "get_job_status_calls": delta.get("GetJobStatus", 0),
        "event_streams_opened": delta.get("GetJobSetEvents", 0),
        "failed_calls": len(failures),
        "first_failure": failures[0] if failures else "",
        "get_task_p50_ms": round(statistics.median(latencies), 2),
        "get_task_p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 2),
    }


class JobSets:
    """The job sets a run submitted to, to cancel on a shared real Armada at the end."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def creates(
        self, armada: ArmadaUnderTest, stub, task_type: str, first: int, count: int
    ) -> tuple[float, list[bytes], int]:
        """`creates`, noting the job sets the connector submitted to."""
        armada.proxy.forget_submits()
        result = creates(stub, task_type, first, count)
        self.names.update(job_set_of(r) for r in armada.proxy.submits()[0])
        return result

    def cancel(self, armada: ArmadaUnderTest) -> None:
        if armada.kind == "real":
            cancel_job_sets(armada.url, QUEUE, self.names)


@dataclasses.dataclass
class FloorRound:
    """The armada connector's creates of one round, and the SubmitJobs requests they made, as the proxy saw them."""

    rate: float
    metas: list[bytes]
    failed: int
    requests: list[bytes]
    submits_in_flight: int
    mean_submits_in_flight: float = 0.0
    raw_rate: float = 0.0

    @classmethod
    def created(cls, armada: ArmadaUnderTest, stub, first: int, count: int) -> FloorRound:
        armada.proxy.forget_submits()
        rate, metas, failed = creates(stub, "armada", first, count)
        return cls(rate, metas, failed, *armada.proxy.submits(), armada.proxy.mean_submits_in_flight())

    def floor(self, armada: ArmadaUnderTest, job_sets: JobSets, label: str) -> None:
        """The raw client sends the same requests again, to job sets of their own, as many at once."""
        self.raw_rate, raw_failed = resubmit(armada.url, self.requests, self.submits_in_flight, label)
        self.failed += raw_failed
        for request in self.requests:
            job_set = job_set_of(request)
            job_sets.names.update((job_set, f"{label}-{job_set}"))


def creates_only(armada: ArmadaUnderTest, count: int, rounds: int, variant: dict[str, str] | None = None) -> dict:
    """The creates figure alone, no-op and armada alternating `rounds` times in one c0, with the CPU
    each create cost c0 and this process (the benchmark's client), and the raw client's floor after each
    armada round."""
    job_sets = JobSets()
    load_at_start = load_average()

    def bench_cpu() -> float:
        """This process's CPU, and the embedded server's in its own process: what a create costs outside c0."""
        return time.process_time() + (cpu_seconds(armada.server_pid) if armada.server_pid else 0.0)

    with tempfile.TemporaryDirectory() as tmp:
        env = {"ARMADA_URL": armada.url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
        if variant:
            env["BENCH_VARIANT_SETTINGS"] = json.dumps(variant)
        with running_c0(env, pathlib.Path(tmp) / "c0.log") as (channel, pid):
            stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
            job_sets.creates(armada, stub, "armada", 0, 200)
            creates(stub, "noop", 0, 200)
            figures: dict[str, dict[str, list[float]]] = {"noop": {}, "armada": {}}
            first = 200
            if variant:
                job_sets.creates(armada, stub, "armada_variant", first, 200)
                first += 200
                figures["armada_variant"] = {}
            settled_every_time = settle(pid, STREAMS_START_AFTER)[1]
            for _ in range(rounds):
                for task_type, seen in figures.items():
                    c0_before, here_before = cpu_seconds(pid), bench_cpu()
                    if task_type == "armada":
                        measured = FloorRound.created(armada, stub, first, count)
                        rate, failed = measured.rate, measured.failed
                    elif task_type == "armada_variant":
                        rate, _, failed = job_sets.creates(armada, stub, task_type, first, count)
                    else:
                        rate, _, failed = creates(stub, task_type, first, count)
                    seen.setdefault("c0_cpu_ms", []).append((cpu_seconds(pid) - c0_before) * 1000 / count)
                    seen.setdefault("bench_cpu_ms", []).append((bench_cpu() - here_before) * 1000 / count)
                    after, quiet = settle(pid, 1.0 if task_type == "noop" else STREAMS_START_AFTER)
                    seen.setdefault("c0_cpu_after_ms", []).append(after * 1000 / count)
                    settled_every_time = settled_every_time and quiet
                    if task_type == "armada":
                        here_before = bench_cpu()
                        measured.floor(armada, job_sets, f"raw{first}")
                        raw_cpu = (bench_cpu() - here_before) * 1000 / count
                        seen.setdefault("raw_bench_cpu_ms", []).append(raw_cpu)
                        seen.setdefault("raw_rate", []).append(measured.raw_rate)
                        seen.setdefault("submit_calls", []).append(len(measured.requests))
                        seen.setdefault("submits_in_flight", []).append(measured.submits_in_flight)
                        seen.setdefault("mean_in_flight", []).append(measured.mean_submits_in_flight)
                        failed = measured.failed
                    first += count
                    seen.setdefault("rate", []).append(rate)
                    seen.setdefault("failed", []).append(failed)
    job_sets.cancel(armada)
    noop, real = figures["noop"], figures["armada"]
    compared = figures.get("armada_variant")
    noop_rate, armada_rate = statistics.median(noop["rate"]), statistics.median(real["rate"])
    raw_rate = statistics.median(real["raw_rate"])
    ratios = [c / r for c, r in zip(real["rate"], real["raw_rate"])]
    vs_noop = [c / n for c, n in zip(real["rate"], noop["rate"])]
    own_cpu = [c - n for c, n in zip(real["c0_cpu_ms"], noop["c0_cpu_ms"])]
    own_with_after = [
        c + ca - n - na
        for c, ca, n, na in zip(real["c0_cpu_ms"], real["c0_cpu_after_ms"], noop["c0_cpu_ms"], noop["c0_cpu_after_ms"])
    ]
    bench_cpu = statistics.median(real["bench_cpu_ms"])
    if armada.kind == "embedded":
        speed = statistics.median(vs_noop)
        speed_target = f">= {VS_NOOP_TARGET}x the no-op's creates/s"
        speed_met = speed >= VS_NOOP_TARGET
    else:
        speed = armada_rate / min(noop_rate, raw_rate)
        speed_target = f">= {VS_FLOOR_TARGET_REAL}x the lower of the no-op's and the raw client's creates/s"
        speed_met = speed >= VS_FLOOR_TARGET_REAL
    return {
        "benchmark": f"creates through c0 against {armada.kind} Armada (medians of the rounds)",
        "armada": armada.kind,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "cpus": os.cpu_count(),
        "load_average_at_start": load_at_start,
        "load_average": load_average(),
        "figures": {
            "creates_per_second": {
                "connector": round(armada_rate),
                "noop": round(noop_rate),
                "raw_client": round(raw_rate),
            },
            "connector_vs_noop": round(statistics.median(vs_noop), 2),
            "connector_vs_target_floor": round(speed, 2),
            "c0_cpu_ms_per_create": {
                "connector": round(statistics.median(real["c0_cpu_ms"]), 3),
                "noop": round(statistics.median(noop["c0_cpu_ms"]), 3),
                "connector_own": round(statistics.median(own_cpu), 3),
                "connector_after": round(statistics.median(real["c0_cpu_after_ms"]), 3),
                "noop_after": round(statistics.median(noop["c0_cpu_after_ms"]), 3),
                "connector_own_with_after": round(statistics.median(own_with_after), 3),
            },
            "c0_quiet_before_every_round": settled_every_time,
            "c0_busy_during_creates": {  # c0's CPU seconds a second of creates: near 1, its one loop is the limit
                name: round(statistics.median(c * r / 1000 for c, r in zip(seen["c0_cpu_ms"], seen["rate"])), 2)
                for name, seen in (("connector", real), ("noop", noop))
            },
            "bench_process_cpu_ms_per_create": {
                "connector": round(bench_cpu, 3),
                "noop": round(statistics.median(noop["bench_cpu_ms"]), 3),
                "raw_client": round(statistics.median(real["raw_bench_cpu_ms"]), 3),
            },
            "rounds": {
                "connector_vs_noop": [round(r, 2) for r in vs_noop],
                "connector_own_c0_cpu_ms": [round(c, 3) for c in own_cpu],
                "connector_own_with_after_ms": [round(c, 3) for c in own_with_after],
                "c0_cpu_ms": [round(c, 3) for c in real["c0_cpu_ms"]],
                "noop_c0_cpu_ms": [round(c, 3) for c in noop["c0_cpu_ms"]],
                "bench_cpu_ms": [round(c, 3) for c in real["bench_cpu_ms"]],
            },
            "spread": {
                "creates_per_second": [round(min(real["rate"])), round(max(real["rate"]))],
                "noop_creates_per_second": [round(min(noop["rate"])), round(max(noop["rate"]))],
                "raw_client_creates_per_second": [round(min(real["raw_rate"])), round(max(real["raw_rate"]))],
                **{
                    name: [round(min(values), 3), round(max(values), 3)]
                    for name, values in (
                        ("connector_vs_noop", vs_noop),
                        ("connector_own_c0_cpu_ms", own_cpu),
                        ("bench_cpu_ms", real["bench_cpu_ms"]),
                    )
                },
            },
        },
        "targets": {
            "speed": speed_target,
            "connector_own_c0_cpu_ms": f"< {OWN_C0_CPU_TARGET_MS}",
            "bench_process_cpu_ms": f"< {BENCH_CPU_TARGET_MS} (embedded)",
        },
        "meets_targets": {
            "speed": speed_met,
            "connector_own_c0_cpu_ms": statistics.median(own_cpu) < OWN_C0_CPU_TARGET_MS,
            "bench_process_cpu_ms": bench_cpu < BENCH_CPU_TARGET_MS if armada.kind == "embedded" else None,
        },
        "creates": count,
        "rounds": rounds,
        "creates_per_second": round(armada_rate),
        "raw_client_jobs_per_second": round(raw_rate),
        "connector_vs_raw_client": round(statistics.median(ratios), 2),
        "connector_vs_raw_client_rounds": [round(r, 2) for r in ratios],
        "noop_creates_per_second": round(noop_rate),
        "create_slowdown_vs_noop": round(noop_rate / armada_rate, 2),
        "c0_cpu_ms_per_create": round(statistics.median(real["c0_cpu_ms"]), 3),
        "noop_c0_cpu_ms_per_create": round(statistics.median(noop["c0_cpu_ms"]), 3),
        "bench_cpu_ms_per_create": round(statistics.median(real["bench_cpu_ms"]), 3),
        "noop_bench_cpu_ms_per_create": round(statistics.median(noop["bench_cpu_ms"]), 3),
        "failed_creates": sum(noop["failed"]) + sum(real["failed"]),
        "items_per_submit_call": round(count / statistics.median(real["submit_calls"]), 1),
        "most_submits_in_flight": max(real["submits_in_flight"]),
        "mean_submits_in_flight": round(statistics.median(real["mean_in_flight"]), 2),
        "variant": {
            "settings": variant,
            "creates_per_second": round(statistics.median(compared["rate"])),
            "vs_connector_rounds": [round(v / c, 2) for v, c in zip(compared["rate"], real["rate"])],
            "vs_noop_rounds": [round(v / n, 2) for v, n in zip(compared["rate"], noop["rate"])],
            "c0_cpu_ms_per_create": round(statistics.median(compared["c0_cpu_ms"]), 3),
        }
        if compared
        else None,
        "rates": {
            "noop": [round(r) for r in noop["rate"]],
            "armada": [round(r) for r in real["rate"]],
            "raw_client": [round(r) for r in real["raw_rate"]],
        },
    }


def at_scale(armada: ArmadaUnderTest, count: int, status_rounds: list[int], memory_in_flight: int) -> dict:
    """Every figure of the docstring in one c0."""
    job_sets = JobSets()
    with tempfile.TemporaryDirectory() as tmp:
        env = {"ARMADA_URL": armada.url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
        with running_c0(env, pathlib.Path(tmp) / "c0.log") as (channel, pid):
            stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
            # warm up: imports, channels, the first job sets' streams
            _, metas, _ = job_sets.creates(armada, stub, "armada", 0, 200)
            creates(stub, "noop", 0, 200)
            status_round(stub, armada.counts, metas)
            baseline_mb = rss_mb(pid)

            noop_rate, _, noop_failed = creates(stub, "noop", 200, count)
            measured = FloorRound.created(armada, stub, 200, count)
            measured.floor(armada, job_sets, "raw")
            armada_rate, create_failed, submit_calls = measured.rate, measured.failed, len(measured.requests)
            metas += measured.metas

            rounds = {}
            for n in status_rounds:
                if len(metas) < n:
                    metas += job_sets.creates(armada, stub, "armada", len(metas), n - len(metas))[1]
                settle(pid, STREAMS_START_AFTER)  # the creates' job sets' streams caught up: steady state
                status_round(stub, armada.counts, metas[:n])  # the round before: jobs asked for the first time
                rounds[n] = status_round(stub, armada.counts, metas[:n])
            if len(metas) < memory_in_flight:
                metas += job_sets.creates(armada, stub, "armada", len(metas), memory_in_flight - len(metas))[1]
            if memory_in_flight:
                rounds[len(metas)] = status_round(stub, armada.counts, metas)
            memory_mb = rss_mb(pid) - baseline_mb
    job_sets.cancel(armada)

    r1, r5 = rounds.get(1000), rounds.get(5000)
    result = {
        "benchmark": f"connector at scale, through c0, against {armada.kind} Armada",
        "armada": armada.kind,
        "load_average": load_average(),
        "cpus": os.cpu_count(),
        "creates_per_second": round(armada_rate),
        "raw_client_jobs_per_second": round(measured.raw_rate),
        "connector_vs_raw_client": round(armada_rate / measured.raw_rate, 2),
        "most_submits_in_flight": measured.submits_in_flight,
        "mean_submits_in_flight": round(measured.mean_submits_in_flight, 2),
        "noop_creates_per_second": round(noop_rate),
        "create_slowdown_vs_noop": round(noop_rate / armada_rate, 2),
        "connector_vs_noop": round(armada_rate / noop_rate, 2),
        "submit_jobs_calls": submit_calls,
        "creates": count,
        "failed_creates": create_failed + noop_failed,
        **{f"round_{n}": figures for n, figures in rounds.items()},
        "memory_in_flight": len(metas),
        "memory_added_mb": round(memory_mb, 1),
        "targets": {
            "creates_per_second": f">= {VS_NOOP_TARGET}x the no-op's (embedded; --only-creates for the rounds)",
            "status_calls_1000": "<= 3",
            "status_calls_5000": "<= 12, no failed call",
            "get_task_p99_ms_1000": "< 5",
            "memory_added_mb_10000": "< 30",
        },
    }
    result["meets_targets"] = {
        "creates": armada_rate / noop_rate >= VS_NOOP_TARGET
        if armada.kind == "embedded"
        else armada_rate / min(noop_rate, measured.raw_rate) >= VS_FLOOR_TARGET_REAL,
        "status_calls_1000": r1 is not None and r1["get_job_status_calls"] <= 3 and not r1["failed_calls"],
        "status_calls_5000": r5 is not None and r5["get_job_status_calls"] <= 12 and not r5["failed_calls"],
        "get_task_p99_1000": r1 is not None and r1["get_task_p99_ms"] < 5,
        "memory": memory_mb < 30,
    }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=3000)
    parser.add_argument("--memory-in-flight", type=int, default=10_000)
    parser.add_argument(
        "--only-creates", type=int, default=0, metavar="ROUNDS", help="only the creates figure, ROUNDS times each"
    )
    parser.add_argument(
        "--status-rounds", type=int, nargs="*", default=[1000, 5000], metavar="N", help="in-flight counts to measure"
    )
    add_armada_option(parser)
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="SETTING=VALUE",
        help="with --only-creates: also a second armada connector with these settings (a ConnectorConfig field "
        "name, e.g. submit_batch_window_seconds=0), its rounds alternating with the default's in the same c0",
    )
    add_hogs_option(parser)
    args = parser.parse_args()
    with armada_under_test(args.armada, own_process=True) as armada, cpu_hogs(args.hogs):
        if args.only_creates:
            variant = dict(setting.split("=", 1) for setting in args.variant)
            result = creates_only(armada, args.creates, args.only_creates, variant or None)
        else:
            result = at_scale(armada, args.creates, args.status_rounds, args.memory_in_flight)
    result["cpu_hogs"] = args.hogs
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
