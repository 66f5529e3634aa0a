"""Armada calls per delete and per ending, through a real `c0`, counted at a gRPC proxy in front of Armada.

1. Deletes: N tasks in flight (J job sets) are all deleted at once, as an abort does. Target:
   CancelJobs + CancelJobSet + GetJobStatus calls <= 2 x ceil(N/500) + J (one call per task each before).
2. Endings: N tasks (half fail) end together between two rounds of gets (3 s, spread evenly); the
   status-family calls (GetJobStatus, GetJobDetails, GetJobErrors) from the moment they are released
   until every task reads as ended. Target: <= 2 x ceil(N/500) (>= 1 per task before). Measured with
   the job sets' event streams (the default) and without (bulk refreshes only; there every round's
   refresh makes its GetJobStatus calls anyway, so the target is on the GetJobDetails and
   GetJobErrors calls the endings add).

`--armada embedded` (default): the embedded server, paused (jobs stay LEASED until released), its pods
ending the moment they start (`tests/support/instant_pods.py`). `--armada real`: the bed in ARMADA_URL
with our executor (`eval "$(scripts/real-armada.sh up)"`); the deleted tasks' jobs ask for 3 of a
node's 4 cpu, so one runs per node and the rest stay QUEUED; the ending ones run `read` on a FIFO the
benchmark holds, which releases them all with one write (`--endings-tasks` of them: each is a process
on this machine, and the bed ran at most 256 at once, so 250 at most). Both servers' calls are counted
at `counting_proxy.py`.

Prints one JSON object. Run: .venv/bin/python benchmarks/bench_batched_calls.py [--armada real --endings-tasks 250]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import pathlib
import statistics
import sys
import tempfile
import time
from typing import Callable, Iterator

from flyteidl2.connector import connector_pb2, service_pb2_grpc

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.poll.phases import TERMINAL_PHASES
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from armada_under_test import add_armada_option, armada_channel, load_average  # noqa: E402
from c0_process import running_c0  # noqa: E402
from counting_proxy import CountingProxy, counting_proxy  # noqa: E402

from support.instant_pods import InstantPods  # noqa: E402
from support.pods import pod, submit_many, unique  # noqa: E402

ARMADA = connector_pb2.TaskCategory(name="armada", version=0)
QUEUE = "flyte"
STATUS_FAMILY = ("GetJobStatus", "GetJobDetails", "GetJobErrors")
DELETE_FAMILY = ("CancelJobs", "CancelJobSet", "GetJobStatus")
ROUND_SECONDS = 3.0
SETTLE_SECONDS = 600.0
"""Bound on waits for jobs to reach a state: real Armada starts hundreds of pods in minutes under load."""
IN_FLIGHT = {"QUEUED", "LEASED", "PENDING", "RUNNING"}
ENDED = {"SUCCEEDED", "FAILED", "CANCELLED"}


class Bench:
    """One Armada behind a counting proxy, and how its jobs are held in flight and released together."""

    def __init__(self, kind: str, upstream: str, proxy: CountingProxy, release: Callable[[int], None], held: set[str]):
        self.kind, self.upstream, self.proxy, self.release = kind, upstream, proxy, release
        self.held = held
        """The states a job is held in until released."""

    def client(self):
        from armada_client.client import ArmadaClient  # after armada_flyte, which aliases its google.api protos

        return ArmadaClient(armada_channel(self.upstream))

    def states(self, ids: list[str]) -> list[str]:
        """Straight to the server, past the proxy: the benchmark's own checks are not counted."""
        from armada_flyte.armada_names import JobState

        client, found = self.client(), []
        for start in range(0, len(ids), 500):
            states = client.get_job_status(ids[start : start + 500]).job_states
            found += [JobState.name_of(states[i]) for i in ids[start : start + 500]]
        return found

    def wait_for(self, ids: list[str], wanted: set[str], what: str) -> None:
        deadline = time.monotonic() + SETTLE_SECONDS
        while not all(state in wanted for state in self.states(ids)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: not within {SETTLE_SECONDS} s")
            time.sleep(0.5)

    def submit(self, job_set: str, spec, count: int) -> tuple[list[str], list[bytes]]:
        """`count` jobs in one job set; their ids and the metadata c0 would have written for them."""
        ids = submit_many(self.client(), QUEUE, job_set, spec, count)
        now = time.time()
        return ids, [
            ArmadaJobMetadata(job_id=i, job_set_id=job_set, queue=QUEUE, submitted_at=now).encode() for i in ids
        ]


@contextlib.contextmanager
def embedded_bench() -> Iterator[Bench]:
    """The embedded server, paused (jobs stay LEASED until released), its pods ending the moment they start."""
    config = EmbeddedConfig(port=0, queues=(QUEUE,), paused=True, pod_runner=InstantPods())
    with EmbeddedArmada(config) as armada, counting_proxy(armada.url) as proxy:
        yield Bench("embedded", armada.url, proxy, lambda count: armada.resume(), {"QUEUED", "LEASED"})


@contextlib.contextmanager
def real_bench(workdir: pathlib.Path) -> Iterator[Bench]:
    """The bed in ARMADA_URL; jobs held on a FIFO this process keeps open (closing it ends them all)."""
    if not os.environ.get("ARMADA_URL"):
        raise SystemExit('--armada real needs a bed in ARMADA_URL: eval "$(scripts/real-armada.sh up)"')
    gate = workdir / "gate"
    os.mkfifo(gate, 0o666)
    descriptor = os.open(gate, os.O_RDWR)
    try:
        with counting_proxy(os.environ["ARMADA_URL"]) as proxy:
            yield Bench(
                "real", os.environ["ARMADA_URL"], proxy, lambda count: os.write(descriptor, b"\n" * count), {"RUNNING"}
            )
    finally:
        os.close(descriptor)
        gate.unlink()


def ending_pod(bench: Bench, gate: pathlib.Path, failing: bool):
    if bench.kind == "embedded":  # InstantPods: `false` fails with exit code 1
        return pod(("false",) if failing else ("true",), cpu="10m", memory="16Mi")
    return pod(("sh", "-c", f"read line < {gate}; exit {1 if failing else 0}"), cpu="10m", memory="16Mi")


def queued_pod(bench: Bench):
    """On real Armada, 3 of a node's 4 cpu: one runs per amd64 node, the rest stay QUEUED."""
    if bench.kind == "embedded":
        return pod(("true",), cpu="10m", memory="16Mi")
    return pod(("sleep", "600"), cpu="3", memory="16Mi")


def a_round(stub, metas: list[bytes]) -> list[int]:
    """One GetTask per task, spread evenly over a round; their phases."""
    gap, began, futures = ROUND_SECONDS / len(metas), time.monotonic(), []
    for i, meta in enumerate(metas):
        futures.append(stub.GetTask.future(connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA)))
        time.sleep(max(0.0, began + i * gap - time.monotonic()))
    return [f.result(timeout=120).resource.phase for f in futures]


def spent_since(proxy: CountingProxy, before: dict[str, int], methods: tuple[str, ...]) -> dict[str, int]:
    after = proxy.counts()
    return {m: after.get(m, 0) - before.get(m, 0) for m in methods}


def deletes(bench: Bench, count: int, job_sets: int, workdir: pathlib.Path) -> dict:
    submitted = [bench.submit(unique(f"abort-{j}"), queued_pod(bench), count // job_sets) for j in range(job_sets)]
    ids = [i for job_ids, _ in submitted for i in job_ids]
    metas = [m for _, job_metas in submitted for m in job_metas]
    bench.wait_for(ids, IN_FLIGHT, "the jobs to be in flight")
    env = {"ARMADA_URL": bench.proxy.address, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
    with running_c0(env, workdir / "c0-deletes.log") as (channel, _):
        stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
        before = bench.proxy.counts()
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
        spent = spent_since(bench.proxy, before, DELETE_FAMILY)
    bench.wait_for(ids, {"CANCELLED"}, "the deleted jobs to be CANCELLED")
    target = 2 * math.ceil(len(metas) / 500) + job_sets
    return {
        "tasks": len(metas),
        "job_sets": job_sets,
        "by_method": spent,
        "target": target,
        "meets_target": sum(spent.values()) <= target,
        "all_answered_seconds": round(took, 2),
        "delete_p50_seconds": round(statistics.median(latencies), 3),
    }


def endings(bench: Bench, count: int, streams: bool, workdir: pathlib.Path) -> dict:
    gate = workdir / "gate"
    ok = bench.submit(unique("ends-ok"), ending_pod(bench, gate, False), count // 2)
    bad = bench.submit(unique("ends-bad"), ending_pod(bench, gate, True), count - count // 2)
    ids, metas = ok[0] + bad[0], ok[1] + bad[1]
    env = {
        "ARMADA_URL": bench.proxy.address,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "ARMADA_FLYTE_STATUS_EVENT_STREAMS": "true" if streams else "false",
    }
    with running_c0(env, workdir / f"c0-endings-{streams}.log") as (channel, _):
        stub = service_pb2_grpc.AsyncConnectorServiceStub(channel)
        bench.wait_for(ids, bench.held, f"the jobs to be held ({', '.join(sorted(bench.held))})")
        phases = a_round(stub, metas)  # in flight: c0 learns the jobs (and follows their job sets)
        if any(p in TERMINAL_PHASES for p in phases):
            raise RuntimeError("a task read as ended before its job was released")
        before = bench.proxy.counts()
        bench.release(count)
        bench.wait_for(ids, ENDED, "the released jobs to end")
        rounds = 0
        while True:
            rounds += 1
            phases = a_round(stub, metas)
            if all(p in TERMINAL_PHASES for p in phases) or rounds == 10:
                break
        by_method = spent_since(bench.proxy, before, STATUS_FAMILY)
    target = 2 * math.ceil(count / 500)
    counted = sum(by_method.values()) - (0 if streams else by_method["GetJobStatus"])
    return {
        "tasks": count,
        "event_streams": streams,
        "rounds_until_all_read_ended": rounds,
        "status_family_calls": sum(by_method.values()),
        "by_method": by_method,
        "target": target,
        "target_counts": "status-family calls" if streams else "GetJobDetails + GetJobErrors calls",
        "meets_target": counted <= target and all(p in TERMINAL_PHASES for p in phases),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_armada_option(parser)
    parser.add_argument("--tasks", type=int, default=1000, help="tasks deleted at once")
    parser.add_argument("--endings-tasks", type=int, help="tasks that end at once (default: --tasks)")
    parser.add_argument("--job-sets", type=int, default=2, help="job sets the deleted tasks are in")
    args = parser.parse_args()
    ending = args.endings_tasks or args.tasks
    result: dict[str, object] = {"armada": args.armada, "load_average_before": load_average()}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        workdir.chmod(0o711)  # the pods, each a uid of its own under a root executor, open the gate in it

        def bench() -> contextlib.AbstractContextManager[Bench]:
            return embedded_bench() if args.armada == "embedded" else real_bench(workdir)

        parts = {
            "deletes": lambda each: deletes(each, args.tasks, args.job_sets, workdir),
            "endings_streamed": lambda each: endings(each, ending, True, workdir),
            "endings_bulk": lambda each: endings(each, ending, False, workdir),
        }
        for name, part in parts.items():
            try:
                with bench() as each:  # embedded: a fresh server each (paused until released)
                    result[name] = part(each)
            except RuntimeError as exc:  # a part that could not run (c0 slow to start, jobs not held) is reported
                result[name] = {"error": str(exc), "meets_target": False}
    result["load_average_after"] = load_average()
    result["meets_targets"] = all(result[k]["meets_target"] for k in parts)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
