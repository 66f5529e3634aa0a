"""Deletes and endings cost Armada calls per batch, counted at a gRPC proxy in front of either server.

The same tests run on the embedded server and, with `--armada real`, on real Armada (the calls real
Armada receives can't be counted inside it, so both are counted where they arrive: the benchmarks'
`counting_proxy.py`, between c0 and the server). `test_batched_calls.py` counts inside the embedded
server, at larger N.

How real Armada refuses a cancel (v0.22.7, `internal/server/submit/submit.go` CancelJobs): per call,
never per id. It checks the reason's length, that queue and job set are named, and that the queue
exists and the caller may cancel in it; every id of an accepted call is cancelled (an unknown or
ended one is a no-op). The connector batches cancels per (queue, job set, reason), so a refused
cancel is in a batch of its own: it fails alone, and the deletes gathered beside it go through.
"""

from __future__ import annotations

import math
import os
import pathlib
import sys
import time
from concurrent.futures import Future
from typing import Callable, Iterator

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.poll.phases import TERMINAL_PHASES

from support.armada_channels import armada_channel
from support.c0_service import ARMADA_TASKS, get_round, running_c0
from support.pods import pod, submit_many, unique
from support.waiting import wait_until

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from counting_proxy import CountingProxy, counting_proxy  # noqa: E402

QUEUE = "flyte"
STATUS_FAMILY = ("GetJobStatus", "GetJobDetails", "GetJobErrors")
DELETE_FAMILY = ("CancelJobs", "CancelJobSet", "GetJobStatus")
ENDED = {submit_pb2.SUCCEEDED, submit_pb2.FAILED, submit_pb2.CANCELLED}
SETTLE_SECONDS = 240.0
"""Bound on waits for hundreds of pods to start or end on a loaded machine (a bound on failures only)."""


@pytest.fixture
def proxy(armada) -> Iterator[CountingProxy]:
    with counting_proxy(armada.url) as running:
        yield running


@pytest.fixture
def client(armada) -> Iterator[ArmadaClient]:
    """Straight to the server, past the proxy: the test's own submits and checks are not counted."""
    with armada_channel(armada.url) as channel:
        yield ArmadaClient(channel)


@pytest.fixture
def job_set(client) -> Iterator[Callable[[str], str]]:
    """Fresh job set names; whatever of theirs is still in flight at the end is cancelled, so a failed test
    leaves no queued jobs on a shared bed."""
    made: list[str] = []

    def fresh(prefix: str) -> str:
        made.append(unique(prefix))
        return made[-1]

    yield fresh
    for name in made:
        client.cancel_jobset(queue=QUEUE, job_set_id=name, filter_states=[])


def _c0_env(proxy: CountingProxy) -> dict[str, str]:
    return {
        "ARMADA_URL": proxy.address,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        # a quiet period longer than any pause between the test's sends, even under load
        "ARMADA_FLYTE_CANCEL_BATCH_WINDOW_SECONDS": "1",
        "ARMADA_FLYTE_CANCEL_BATCH_MAX_WAIT_SECONDS": "20",
    }


def _queued_behind_each_other() -> object:
    """A pod too big for two on one node (3 of a node's 4 cpu): one runs per amd64 node, the rest stay
    QUEUED, so hundreds of tasks are in flight while the machine runs two processes."""
    return pod(("sleep", "600"), cpu="3", memory="16Mi")


def _metas(job_set: str, ids: list[str], queue: str = QUEUE) -> list[bytes]:
    now = time.time()
    return [ArmadaJobMetadata(job_id=i, job_set_id=job_set, queue=queue, submitted_at=now).encode() for i in ids]


def _counted(proxy: CountingProxy, methods: tuple[str, ...]) -> int:
    counts = proxy.counts()
    return sum(counts.get(method, 0) for method in methods)


def _states(client: ArmadaClient, ids: list[str]) -> dict[str, int]:
    states: dict[str, int] = {}
    for start in range(0, len(ids), 500):
        states.update(client.get_job_status(ids[start : start + 500]).job_states)
    return states


def _all_in(client: ArmadaClient, ids: list[str], wanted: set[int]) -> bool:
    return all(state in wanted for state in _states(client, ids).values())


def _delete_all(c0, metas: list[bytes]) -> list[Future]:
    return [
        c0.DeleteTask.future(connector_pb2.DeleteTaskRequest(resource_meta=m, task_category=ARMADA_TASKS), timeout=120)
        for m in metas
    ]


def test_600_deletes_through_c0_cost_one_cancel_call_per_job_set(proxy, client, job_set, tmp_path):
    """An abort: 600 tasks in flight in two job sets, all deleted at once. No status call is made first."""
    sets = {job_set("abort"): 300, job_set("abort"): 300}
    ids = {name: submit_many(client, QUEUE, name, _queued_behind_each_other(), n) for name, n in sets.items()}
    metas = [meta for name, job_ids in ids.items() for meta in _metas(name, job_ids)]
    all_ids = [job_id for job_ids in ids.values() for job_id in job_ids]
    with running_c0(_c0_env(proxy), tmp_path / "c0.log") as c0:
        before = proxy.counts()
        for delete in _delete_all(c0, metas):
            delete.result()
        after = proxy.counts()
    spent = {method: after.get(method, 0) - before.get(method, 0) for method in DELETE_FAMILY}
    print(f"{len(metas)} deletes through c0, counted at the proxy: {spent}")
    assert sum(spent.values()) <= 2 * math.ceil(len(metas) / 500) + len(sets)
    assert spent["GetJobStatus"] == 0  # a delete asks nothing first: Armada cancels an ended job as a no-op
    wait_until(lambda: _all_in(client, all_ids, {submit_pb2.CANCELLED}), SETTLE_SECONDS, "every job to be CANCELLED")


def test_a_refused_cancel_fails_only_its_own_delete(proxy, client, job_set, tmp_path):
    """A delete Armada refuses (its task's queue no longer exists) fails with Armada's reason; the 200 deletes
    sent in the same moment cancel their jobs in one call."""
    mixed = job_set("mixed")
    ids = submit_many(client, QUEUE, mixed, _queued_behind_each_other(), 200)
    refused = _metas(mixed, [ids[0]], queue="no-such-queue")
    with running_c0(_c0_env(proxy), tmp_path / "c0.log") as c0:
        before = proxy.counts()
        *deletes, refusal = _delete_all(c0, [*_metas(mixed, ids), *refused])
        for delete in deletes:
            delete.result()
        with pytest.raises(grpc.RpcError) as raised:
            refusal.result()
        cancels = proxy.counts().get("CancelJobs", 0) - before.get("CancelJobs", 0)
    assert "CancelJobs" in raised.value.details() and "no-such-queue" in raised.value.details()
    assert cancels <= 2 * math.ceil(len(ids) / 500) + 2  # the 200 in one call or two, the refused one alone
    wait_until(lambda: _all_in(client, ids, {submit_pb2.CANCELLED}), SETTLE_SECONDS, "the 200 jobs to be CANCELLED")


def _waits_for_the_gate(gate: pathlib.Path, exit_code: int) -> object:
    """A pod that reads one line from the gate (a FIFO the test holds open), then exits with `exit_code`."""
    return pod(("sh", "-c", f"read line < {gate}; exit {exit_code}"), cpu="10m", memory="16Mi")


@pytest.fixture
def gate(pods_tmp_path: pathlib.Path) -> Iterator[tuple[pathlib.Path, int]]:
    """A FIFO held open for writing: its readers wait for a line each; when it closes, every reader reads EOF."""
    path = pods_tmp_path / "gate"
    os.mkfifo(path, 0o666)
    descriptor = os.open(path, os.O_RDWR)
    try:
        yield path, descriptor
    finally:
        os.close(descriptor)


def test_200_endings_through_c0_cost_no_status_call_per_task(proxy, client, job_set, gate, tmp_path):
    """200 tasks (half fail) end at once, released together through a gate, while c0 answers their gets:
    the job sets' event streams say how each ended, so the endings cost at most 2 x ceil(N/500)
    status-family calls (GetJobStatus, GetJobDetails, GetJobErrors) in all, not one or more per task."""
    path, descriptor = gate
    sets = {job_set("ends-ok"): 0, job_set("ends-bad"): 1}
    ids = {name: submit_many(client, QUEUE, name, _waits_for_the_gate(path, code), 100) for name, code in sets.items()}
    metas = [meta for name, job_ids in ids.items() for meta in _metas(name, job_ids)]
    all_ids = [job_id for job_ids in ids.values() for job_id in job_ids]
    with running_c0(_c0_env(proxy), tmp_path / "c0.log") as c0:
        wait_until(lambda: _all_in(client, all_ids, {submit_pb2.RUNNING}), SETTLE_SECONDS, "the 200 pods to run")
        in_flight = get_round(c0, metas, 1.0)
        assert not any(answer.resource.phase in TERMINAL_PHASES for answer in in_flight)
        before = {method: proxy.counts().get(method, 0) for method in STATUS_FAMILY}
        os.write(descriptor, b"\n" * len(all_ids))
        wait_until(lambda: _all_in(client, all_ids, ENDED), SETTLE_SECONDS, "the 200 jobs to end")
        rounds: list[list[connector_pb2.GetTaskResponse]] = []

        def ended_everywhere() -> bool:
            rounds.append(get_round(c0, metas, 1.5))
            return all(answer.resource.phase in TERMINAL_PHASES for answer in rounds[-1])

        wait_until(ended_everywhere, 60, "every task to read as ended")
        after = proxy.counts()
    spent = {method: after.get(method, 0) - before[method] for method in STATUS_FAMILY}
    print(f"{len(metas)} endings through c0 ({len(rounds)} rounds after), counted at the proxy: {spent}")
    log_tail = "\n".join((tmp_path / "c0.log").read_text(errors="replace").splitlines()[-40:])
    assert sum(spent.values()) <= 2 * math.ceil(len(metas) / 500), f"the end of c0's log:\n{log_tail}"
    ok, bad = rounds[-1][:100], rounds[-1][100:]
    assert {answer.resource.phase for answer in ok} == {TaskExecution.SUCCEEDED}
    assert {answer.resource.phase for answer in bad} == {TaskExecution.FAILED}
    assert "exit code 1" in bad[0].resource.message
    assert dict(bad[0].resource.custom_info)["exit_codes"] == {"main": 1}
