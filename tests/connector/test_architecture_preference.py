"""An ordered architecture preference through the connector, on the embedded server or (`--armada real`)
real Armada: the first architecture while it has room; when it has none, the job moves to the next after
`spill_after`, and only then; never two runs of one task.

The default cluster has two amd64 and two arm64 nodes of 4 CPUs; "full" means blockers pinned to arm64
hold every arm64 CPU until the test lets them end.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from armada_client.client import ArmadaClient
from flyteidl2.connector import connector_pb2
from flyteidl2.core import tasks_pb2
from flyteidl2.core.execution_pb2 import TaskExecution
from google.protobuf import json_format

import armada_flyte
from armada_flyte import Architecture, ArmadaConfig
from armada_flyte.armada_names import JobState
from armada_flyte.spec import SubmissionSpec

from support.armada_channels import armada_channel
from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.c0_service import poll_until_done
from support.connector_blockers import DONE, fill, finish
from support.job_events import job_set_events, kind

SPILL_AFTER = 3.0
PREFER_ARM = ArmadaConfig(architecture=["arm64", "amd64"], spill_after=SPILL_AFTER)
SPILLED = f"spilled from arm64 to amd64 after {SPILL_AFTER:g} s queued: no arm64 node had room"
SESSION = uuid.uuid4().hex[:6]
"""Run names carry it: a bed keeps client ids for a week, and a rerun on the same bed would get the jobs of
the last run back (Armada's deduplication)."""


def fresh(run_name: str) -> str:
    return f"{run_name}-{SESSION}"


@pytest.fixture
def connector(connector):
    """The connector, asking Armada's scheduler why a job waits from the start, afresh every half second."""
    armada_flyte.configure(queued_report_after_seconds=0, queued_report_refresh_seconds=0.5)
    return connector


def preferring(config: ArmadaConfig = PREFER_ARM, image_architectures=()) -> tasks_pb2.TaskTemplate:
    template = python_template("print('preferred')", config, name="demo.prefer", cpu="1")
    if image_architectures:
        spec = SubmissionSpec.from_config(config, {"architecture": "task"}, image_architectures)
        template.custom.Clear()
        template.custom.update(spec.to_custom())
    return template


async def create(connector, template, run_name: str, action: str = "p0"):
    return await connector.create(template, "s3://b/raw", task_execution_metadata=execution_metadata(run_name, action))


def submitted_jobs(armada, meta) -> list[str]:
    """Every job Armada holds in the task's job set (each step is one)."""
    client = ArmadaClient(armada_channel(armada.url))
    messages = job_set_events(client, meta.queue, meta.job_set_id)
    return [m.message.submitted.job_id for m in messages if kind(m) == "submitted"]


async def stays_queued(connector, meta, waits: float):
    """Poll for `waits` seconds past the job's submission (at least one poll after a report was read);
    every answer must be queued, on the first job."""
    seen = []
    deadline = time.monotonic() + waits + 30
    while True:
        resource = await connector.get(meta)
        seen.append(resource)
        assert resource.phase not in DONE, resource.message
        assert "spill" not in resource.message, resource.message
        if time.time() - meta.submitted_at >= waits and "queued_report" in resource.custom_info:
            return seen
        assert time.monotonic() < deadline, f"no scheduling report read: {resource.message}"
        await asyncio.sleep(0.1)


def test_a_preference_with_room_runs_on_the_first_architecture(connector):
    async def scenario():
        meta = await create(connector, preferring(), fresh("prefer-room"))
        return meta, await wait_for(connector, meta, DONE)

    meta, resource = run(scenario())
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    info = resource.custom_info
    assert info["architecture"] == "arm64" and info["node"].startswith("arm64-")
    assert info["architecture_preference"] == ["arm64", "amd64"] and "spilled_from" not in info
    assert (meta.architecture, meta.node_group) == ("arm64", "arm64")


def test_without_room_it_spills_after_spill_after_and_succeeds_on_the_next(connector, armada, pods_tmp_path):
    stop = pods_tmp_path / "stop"

    async def scenario():
        blockers = await fill(connector, "arm64", stop, fresh("spill-fill"))
        try:
            meta = await create(connector, preferring(), fresh("prefer-spill"))
            said = []
            while (resource := await connector.get(meta)).phase not in DONE:
                said.append(resource.message)
                assert time.time() - meta.submitted_at < 90, resource.message
                await asyncio.sleep(0.05)
            return meta, said, resource, time.time(), await connector.armada_state(meta)
        finally:
            await finish(connector, blockers, stop)

    meta, said, resource, ended, first_state = run(scenario())
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    info = resource.custom_info
    assert info["architecture"] == "amd64" and info["node"].startswith("amd64-") and info["node_group"] == "amd64"
    assert info["spilled_from"] == "arm64"
    assert resource.message.startswith(SPILLED), resource.message
    assert ended - meta.submitted_at >= SPILL_AFTER
    assert any(m.startswith("spilling from arm64 to amd64") for m in said), said
    assert first_state == "CANCELLED"  # the arm64 job, cancelled while queued: it never ran
    assert len(submitted_jobs(armada, meta)) == 2


@pytest.mark.needs_binoculars  # the log service: the embedded server's, or Armada's on a bed with Kubernetes
def test_the_logs_of_a_spilled_task_are_its_running_job_s(connector, pods_tmp_path):
    stop = pods_tmp_path / "stop"

    async def scenario():
        blockers = await fill(connector, "arm64", stop, fresh("spill-logs-fill"))
        try:
            meta = await create(connector, preferring(), fresh("prefer-logs"))
            resource = await wait_for(connector, meta, DONE, timeout=90)
            return resource, await connector.get_logs(meta)
        finally:
            await finish(connector, blockers, stop)

    resource, logs = run(scenario())
    assert resource.custom_info["spilled_from"] == "arm64", resource.message
    assert "preferred" in [line.message for line in logs.body.lines]


def test_a_wait_another_architecture_would_not_end_does_not_spill(connector, armada):
    """A gang of two with one member submitted waits for its other member, not for room: it stays put."""
    lonely = ArmadaConfig(architecture=["arm64", "amd64"], spill_after=1, gang_id="lonely", gang_cardinality=2)

    async def scenario():
        meta = await create(connector, preferring(lonely), fresh("prefer-lonely"))
        try:
            seen = await stays_queued(connector, meta, 4)
            return meta, seen, await connector.armada_state(meta)
        finally:
            await connector.delete(meta)

    meta, seen, state = run(scenario())
    assert state == "QUEUED" and submitted_jobs(armada, meta) == [meta.job_id]
    assert not seen[-1].custom_info["queued_report"]["waits_for_room"]


def test_an_image_lacking_the_next_architecture_does_not_spill_to_it(connector, armada, pods_tmp_path):
    stop = pods_tmp_path / "stop"

    async def scenario():
        blockers = await fill(connector, "arm64", stop, fresh("arm-only-fill"))
        try:
            meta = await create(
                connector, preferring(image_architectures=(Architecture.arm64,)), fresh("prefer-arm-only")
            )
            try:
                seen = await stays_queued(connector, meta, SPILL_AFTER + 2)
                return meta, seen, await connector.armada_state(meta)
            finally:
                await connector.delete(meta)
        finally:
            await finish(connector, blockers, stop)

    meta, seen, state = run(scenario())
    assert (meta.architecture, meta.spill_jobs) == ("arm64", "")  # narrowed to one: pinned
    assert state in ("QUEUED", "CANCELLED") and submitted_jobs(armada, meta) == [meta.job_id]
    assert seen[-1].custom_info["architecture"] == "arm64"


def test_a_job_leased_as_the_spill_starts_is_kept_and_nothing_else_runs(connector, armada, pods_tmp_path):
    """The race: the connector saw the job queued past spill_after with no room, and between that and its
    cancel the job is leased. The cancel touches only queued jobs, so the first job runs; no second is sent."""
    stop = pods_tmp_path / "stop"
    cancels = []

    async def scenario():
        blockers = await fill(connector, "arm64", stop, fresh("race-fill"))
        api = (await connector.context()).api
        cancel_queued = api.cancel_job_set

        async def leased_first(queue, job_set_id, reason, *, queued_only):
            cancels.append(queued_only)
            await finish(connector, blockers, stop)  # arm64 frees up: the waiting job is leased now
            deadline = time.monotonic() + 60
            while (await api.status([meta.job_id]))[meta.job_id] == JobState.QUEUED:
                assert time.monotonic() < deadline, "the waiting job was never leased"
                await asyncio.sleep(0.05)
            await cancel_queued(queue, job_set_id, reason, queued_only=queued_only)

        api.cancel_job_set = leased_first
        try:
            meta = await create(connector, preferring(), fresh("prefer-race"))
            return meta, await wait_for(connector, meta, DONE, timeout=90)
        finally:
            if not stop.exists():
                await finish(connector, blockers, stop)

    meta, resource = run(scenario())
    assert cancels == [True]
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    assert resource.custom_info["architecture"] == "arm64" and "spilled_from" not in resource.custom_info
    assert submitted_jobs(armada, meta) == [meta.job_id]


def test_a_preference_spills_through_c0(c0, connector, pods_tmp_path):
    """The production path: a Flyte backend's CreateTask / GetTask over gRPC to a real c0 process. GetTask
    cannot hand back new metadata, so every poll finds the current job from what CreateTask returned."""
    stop = pods_tmp_path / "stop"
    blockers = run(fill(connector, "arm64", stop, fresh("c0-prefer-fill")))
    try:
        request = connector_pb2.CreateTaskRequest(
            template=preferring(),
            output_prefix="s3://bucket/raw/c0prefer/a0/0",
            task_execution_metadata=execution_metadata(run=fresh("c0prefer")),
        )
        meta = c0.CreateTask(request, timeout=30).resource_meta
        resource = poll_until_done(c0, meta, DONE, timeout=90)
    finally:
        run(finish(connector, blockers, stop))
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    info = json_format.MessageToDict(resource.custom_info)
    assert info["architecture"] == "amd64" and info["spilled_from"] == "arm64"
    assert resource.message.startswith(SPILLED), resource.message


def test_a_gang_spills_as_a_whole(connector, armada, pods_tmp_path):
    """One member's spill cancels every member still queued (they share a job set); each moves on to one gang
    of the next architecture, which Armada starts whole. The second member would wait a minute on its own:
    it moves when the first one spills the gang."""
    stop = pods_tmp_path / "stop"

    def member(spill_after: float) -> ArmadaConfig:
        return ArmadaConfig(
            architecture=["arm64", "amd64"], spill_after=spill_after, gang_id="movers", gang_cardinality=2
        )

    async def scenario():
        blockers = await fill(connector, "arm64", stop, fresh("gang-spill-fill"))
        try:
            metas = [
                await create(connector, preferring(member(wait)), fresh("prefer-gang"), f"m{n}")
                for n, wait in enumerate((SPILL_AFTER, 60.0))
            ]
            return metas, await asyncio.gather(*(wait_for(connector, meta, DONE, timeout=90) for meta in metas))
        finally:
            await finish(connector, blockers, stop)

    metas, resources = run(scenario())
    assert len({meta.job_set_id for meta in metas}) == 1
    for resource in resources:
        assert resource.phase == TaskExecution.SUCCEEDED, resource.message
        assert resource.custom_info["architecture"] == "amd64" and resource.custom_info["spilled_from"] == "arm64"
    assert len(submitted_jobs(armada, metas[0])) == 4
