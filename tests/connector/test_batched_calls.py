"""Deletes and endings cost Armada calls per batch, not per task; counted AT the embedded server.

Armada's CancelJobs takes many ids of one job set (`internal/server/submit/submit.go`), and
GetJobDetails and GetJobErrors take up to 500 ids. A job set's event stream says where each job
ran, how it ended and why (`failed` carries the node, the reason and each container's exit code),
so a connector that follows it needs no call per ending at all.
"""

from __future__ import annotations

import asyncio
import math
import time

import grpc
import pytest
from armada_client.client import ArmadaClient
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.poll.phases import TERMINAL_PHASES
from armada_flyte.connector.service import ArmadaConnector
from armada_flyte.errors import ArmadaFlyteError, ArmadaUnavailable

from support.c0_service import ARMADA_TASKS, get_round, running_c0
from support.instant_pods import InstantPods
from support.pods import pod, submit_many
from support.waiting import wait_until

STATUS_FAMILY = ("GetJobStatus", "GetJobDetails", "GetJobErrors")
ENDED = {"SUCCEEDED", "FAILED", "CANCELLED"}


@pytest.fixture
def paused_armada():
    """Jobs stay LEASED until `resume()`; then each pod ends at once (`false` fails with exit code 1)."""
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), paused=True, pod_runner=InstantPods())) as server:
        yield server


def _submit(armada, job_set: str, count: int, failing: bool = False) -> list[str]:
    spec = pod(("false",) if failing else ("true",), cpu="10m", memory="16Mi")
    return submit_many(ArmadaClient(grpc.insecure_channel(armada.url)), "flyte", job_set, spec, count)


def _metas(job_set: str, ids: list[str]) -> list[bytes]:
    return [
        ArmadaJobMetadata(job_id=job_id, job_set_id=job_set, queue="flyte", submitted_at=time.time()).encode()
        for job_id in ids
    ]


def _two_job_sets_of_500(armada, names: tuple[str, str]) -> tuple[dict[str, list[str]], list[bytes]]:
    """1000 jobs in flight, 500 in each job set of `names`: their ids by job set, and their tasks' metadata."""
    sets = {job_set: _submit(armada, job_set, 500) for job_set in names}
    return sets, [meta for job_set, ids in sets.items() for meta in _metas(job_set, ids)]


def _env(armada, **settings: str) -> dict[str, str]:
    """c0's environment for `armada`, with ARMADA_FLYTE_<NAME> `settings`."""
    return {
        "ARMADA_URL": armada.url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        **{f"ARMADA_FLYTE_{name.upper()}": value for name, value in settings.items()},
    }


def _calls(armada, methods: tuple[str, ...]) -> int:
    counts = armada.calls.counts()
    return sum(counts.get(method, 0) for method in methods)


def _ended_each(answers: list[connector_pb2.GetTaskResponse]) -> list[bool]:
    return [answer.resource.phase in TERMINAL_PHASES for answer in answers]


def _ended(answers: list[connector_pb2.GetTaskResponse]) -> bool:
    return all(_ended_each(answers))


def _all_ended(armada, ids: list[str]) -> bool:
    return all(armada.job(job_id).state in ENDED for job_id in ids)


def test_1000_deletes_through_c0_cost_one_cancel_call_per_job_set(paused_armada, tmp_path):
    """An abort: every task deleted at once. Today's cost was a GetJobStatus and a CancelJobs per task."""
    sets, metas = _two_job_sets_of_500(paused_armada, ("abort-a", "abort-b"))
    # a quiet period longer than any pause between the test's 1000 sends, even under load
    env = _env(paused_armada, cancel_batch_window_seconds="1", cancel_batch_max_wait_seconds="20")
    with running_c0(env, tmp_path / "c0.log") as c0:
        before = paused_armada.calls.counts()
        deletes = [
            c0.DeleteTask.future(
                connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS), timeout=60
            )
            for meta in metas
        ]
        for delete in deletes:
            delete.result()
        after = paused_armada.calls.counts()
    cancels = after.get("CancelJobs", 0) - before.get("CancelJobs", 0)
    statuses = after.get("GetJobStatus", 0) - before.get("GetJobStatus", 0)
    print(f"1000 deletes through c0: {cancels} CancelJobs, {statuses} GetJobStatus calls at the server")
    assert cancels + statuses <= 2 * math.ceil(len(metas) / 500) + len(sets)
    assert statuses == 0  # a delete asks nothing first: Armada cancels an ended job as a no-op
    all_ids = [job_id for ids in sets.values() for job_id in ids]
    assert {paused_armada.job(job_id).state for job_id in all_ids} == {"CANCELLED"}


def test_a_refused_cancel_fails_only_its_own_delete(paused_armada):
    """A delete the server refuses (its queue doesn't exist) raises; the deletes sent with it still cancel."""
    ids = _submit(paused_armada, "mixed", 200)
    connector = ArmadaConnector(resolve_settings(armada_url=paused_armada.url, cancel_batch_window_seconds=0.2))
    good = [ArmadaJobMetadata(job_id=job_id, job_set_id="mixed", queue="flyte") for job_id in ids]
    refused = ArmadaJobMetadata(job_id=ids[0], job_set_id="mixed", queue="no-such-queue")

    async def delete_all() -> list:
        try:
            deletes = [connector.delete(meta) for meta in [*good, refused]]
            return list(await asyncio.gather(*deletes, return_exceptions=True))
        finally:
            await connector.close()

    *results, refusal = asyncio.run(delete_all())
    assert results == [None] * len(good)
    assert isinstance(refusal, ArmadaFlyteError) and "no-such-queue" in str(refusal)
    assert {paused_armada.job(job_id).state for job_id in ids} == {"CANCELLED"}
    assert paused_armada.calls.count("CancelJobs") <= 2


@pytest.mark.pure
def test_a_refused_cancel_batch_is_retried_one_id_at_a_time_and_an_outage_is_not():
    """Injected failures: a refusal naming the batch is narrowed to the id that caused it; Armada being
    unreachable fails every delete of the batch alike (the backend retries them)."""
    api = ArmadaApi(resolve_settings(armada_url="127.0.0.1:1", cancel_batch_window_seconds=0.05))
    calls: list[list[str]] = []

    async def cancel(queue: str, job_set_id: str, job_ids: list[str], reason: str = "") -> None:
        calls.append(list(job_ids))
        if "down" in job_ids:
            raise ArmadaUnavailable("Armada is unavailable")
        if "bad" in job_ids:
            raise ArmadaFlyteError("Armada CancelJobs failed: refused")

    api.cancel = cancel  # type: ignore[method-assign]

    async def delete(ids: list[str]) -> list:
        return list(await asyncio.gather(*(api.cancel_one("q", "s", i) for i in ids), return_exceptions=True))

    results = asyncio.run(delete(["a", "bad", "c"]))
    assert results[0] is None and results[2] is None and isinstance(results[1], ArmadaFlyteError)
    assert calls[0] == ["a", "bad", "c"] and sorted(map(tuple, calls[1:])) == [("a",), ("bad",), ("c",)]
    calls.clear()
    results = asyncio.run(delete(["x", "down"]))
    assert all(isinstance(r, ArmadaUnavailable) for r in results) and calls == [["x", "down"]]


def test_1000_endings_in_one_round_through_c0_cost_no_call_per_task(paused_armada, tmp_path):
    """1000 tasks end (half fail) between two rounds of gets: the job sets' streams say where each ran and
    why it failed, so the second round costs no GetJobStatus, GetJobDetails or GetJobErrors per task."""
    sets = {"ends-ok": _submit(paused_armada, "ends-ok", 500)}
    sets["ends-bad"] = _submit(paused_armada, "ends-bad", 500, failing=True)
    metas = [meta for job_set, ids in sets.items() for meta in _metas(job_set, ids)]
    all_ids = [job_id for ids in sets.values() for job_id in ids]
    env = {"ARMADA_URL": paused_armada.url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
    with running_c0(env, tmp_path / "c0.log") as c0:
        assert not any(_ended_each(get_round(c0, metas, 1.0)))
        paused_armada.resume()
        wait_until(lambda: _all_ended(paused_armada, all_ids), timeout=60, what="the 1000 jobs to end")
        before = _calls(paused_armada, STATUS_FAMILY)
        rounds = []

        def ended_everywhere() -> bool:
            rounds.append(get_round(c0, metas, 1.5))
            return _ended(rounds[-1])

        wait_until(ended_everywhere, timeout=60, what="every task to read as ended")
        calls = _calls(paused_armada, STATUS_FAMILY) - before
    print(f"1000 endings through c0 ({len(rounds)} rounds): {calls} status-family calls at the server")
    assert calls <= 2 * math.ceil(len(metas) / 500)
    answers = rounds[-1]
    ok, bad = answers[:500], answers[500:]
    assert {r.resource.phase for r in ok} == {TaskExecution.SUCCEEDED}
    assert {r.resource.phase for r in bad} == {TaskExecution.FAILED}
    failure = bad[0].resource
    assert "exit code 1" in failure.message and "on node" in failure.message
    info = dict(failure.custom_info)
    assert info["exit_codes"] == {"main": 1} and info["node"]


def test_endings_a_bulk_refresh_finds_cost_calls_per_500_jobs(paused_armada, tmp_path):
    """Without event streams, the bulk refresh that finds jobs ended asks for their run details and reasons
    in calls of 500 ids: the gets that follow read them from memory."""
    sets = {"bulk-ok": _submit(paused_armada, "bulk-ok", 300)}
    sets["bulk-bad"] = _submit(paused_armada, "bulk-bad", 300, failing=True)
    metas = [meta for job_set, ids in sets.items() for meta in _metas(job_set, ids)]
    all_ids = [job_id for ids in sets.values() for job_id in ids]
    env = {
        "ARMADA_URL": paused_armada.url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "ARMADA_FLYTE_STATUS_EVENT_STREAMS": "false",
        "ARMADA_FLYTE_STATUS_REFRESH_SECONDS": "1",
    }
    with running_c0(env, tmp_path / "c0.log") as c0:
        assert not any(_ended_each(get_round(c0, metas, 1.0)))
        paused_armada.resume()
        wait_until(lambda: _all_ended(paused_armada, all_ids), timeout=60, what="the 600 jobs to end")
        before = _calls(paused_armada, ("GetJobDetails", "GetJobErrors"))
        last: list = []

        def ended_everywhere() -> bool:
            last[:] = get_round(c0, metas, 1.0)
            return _ended(last)

        wait_until(ended_everywhere, timeout=60, what="every task to read as ended")
        lookups = _calls(paused_armada, ("GetJobDetails", "GetJobErrors")) - before
    print(f"600 endings found by bulk refreshes: {lookups} GetJobDetails + GetJobErrors calls at the server")
    # one refresh per 500 ids asks for details, and one for the reasons of those that failed; a refresh
    # running as counting starts may have found some of the endings, leaving the rest to the next one
    assert lookups <= 2 * math.ceil(len(metas) / 500) + 1
    assert "exit code 1" in last[-1].resource.message and "on node" in last[-1].resource.message


def test_jobs_on_live_streams_are_checked_in_bulk_within_the_round_bound(paused_armada, tmp_path):
    """1000 tasks in flight on two live streams, their jobs checked in bulk once a `status_live_check_seconds`
    per job set (here every round): the checks share the rounds' batched GetJobStatus calls, <= 3 a 3 s round."""
    _, metas = _two_job_sets_of_500(paused_armada, ("live-a", "live-b"))
    env = _env(paused_armada, status_live_check_seconds="3")
    rounds = 4
    with running_c0(env, tmp_path / "c0.log") as c0:
        get_round(c0, metas, 3.0)  # the streams start, and catch up
        before = _calls(paused_armada, ("GetJobStatus",))
        started = time.monotonic()
        for _ in range(rounds):
            get_round(c0, metas, 3.0)
        calls = _calls(paused_armada, ("GetJobStatus",)) - before
        seconds = time.monotonic() - started
    print(f"1000 in flight on live streams, {rounds} rounds in {seconds:.1f}s: {calls} GetJobStatus calls")
    assert calls > 0  # the live streams' jobs were checked in bulk
    # each check of both job sets is one batch of 1000 ids: 2 calls, once a period; a round of 3 s (or a
    # longer one under load) holds at most one check more than its length in periods
    assert calls <= 2 * (math.ceil(seconds / 3.0) + 1)
    assert calls <= 3 * rounds + 2
