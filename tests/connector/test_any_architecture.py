"""`architecture="any"` through the connector into the embedded Armada server: jobs land where capacity
is, a gang stays on one architecture, and the connector reports the architecture that ran.

The default embedded cluster has two amd64 and two arm64 nodes of 4 CPUs; "full" means blockers
pinned to that architecture hold every CPU until the test lets them end.
"""

from __future__ import annotations

import pytest
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution
from google.protobuf import json_format

from armada_flyte import ArmadaConfig

from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.c0_service import poll_until_done
from support.connector_blockers import DONE, blocker_code, fill, finish


async def any_jobs(connector, run_name: str, count: int, config: ArmadaConfig = ArmadaConfig(architecture="any")):
    metas = []
    for n in range(count):
        template = python_template("print('anywhere')", config, name=f"demo.any{n}")
        meta = await connector.create(
            template, "s3://b/raw", task_execution_metadata=execution_metadata(run_name, f"x{n}")
        )
        assert (meta.any_of, meta.architecture, meta.architecture_source) == ("amd64,arm64", "", "task")
        metas.append(meta)
    return metas


@pytest.mark.parametrize("full, free", [("arm64", "amd64"), ("amd64", "arm64")])
def test_any_jobs_land_on_the_architecture_with_room(connector, pods_tmp_path, full, free):
    stop = pods_tmp_path / "stop"

    async def scenario():
        blockers = await fill(connector, full, stop, f"fill-{full}")
        try:
            metas = await any_jobs(connector, f"any-{full}", 3)
            return [await wait_for(connector, meta, DONE) for meta in metas]
        finally:
            await finish(connector, blockers, stop)

    for resource in run(scenario()):
        assert resource.phase == TaskExecution.SUCCEEDED, resource.message
        info = resource.custom_info
        assert info["architecture"] == free and info["node"].startswith(f"{free}-") and info["node_group"] == free
        assert info["architectures_allowed"] == ["amd64", "arm64"]
        assert "node's name" in info["architecture_known_by"]
        assert f"on {free} (node {free}-" in resource.message


def test_a_running_any_job_says_where_it_runs(connector, pods_tmp_path):
    stop = pods_tmp_path / "stop"

    async def scenario():
        template = python_template(blocker_code(stop), ArmadaConfig(architecture="any"))
        meta = await connector.create(template, "s3://b/raw", task_execution_metadata=execution_metadata("says", "a0"))
        running = await wait_for(connector, meta, {TaskExecution.RUNNING} | DONE)
        stop.write_text("stop")
        return running, await wait_for(connector, meta, DONE)

    running, done = run(scenario())
    assert running.phase == TaskExecution.RUNNING
    architecture = running.custom_info["architecture"]
    assert architecture in ("amd64", "arm64") and f"is RUNNING on {architecture} (node " in running.message
    assert done.custom_info["architecture"] == architecture


def test_a_gang_of_any_members_lands_on_one_architecture(connector, pods_tmp_path):
    """amd64 keeps room for one 2-CPU member only, so a gang of three could only start there by splitting
    across architectures; the kubernetes.io/arch uniformity label sends it whole to arm64 instead."""
    stop = pods_tmp_path / "stop"
    gang = ArmadaConfig(architecture="any", gang_id="trainers", gang_cardinality=3)

    async def scenario():
        blockers = await fill(connector, "amd64", stop, "gang-fill", cpu="3")  # 2 of 8 amd64 CPUs stay free
        try:
            metas = []
            for n in range(3):
                template = python_template("print('member')", gang, name="demo.member", cpu="2")
                metas.append(
                    await connector.create(
                        template, "s3://b/raw", task_execution_metadata=execution_metadata("gangrun", f"m{n}")
                    )
                )
            return [await wait_for(connector, meta, DONE) for meta in metas]
        finally:
            await finish(connector, blockers, stop)

    resources = run(scenario())
    assert all(r.phase == TaskExecution.SUCCEEDED for r in resources), [r.message for r in resources]
    assert {r.custom_info["architecture"] for r in resources} == {"arm64"}


def test_a_gang_mixing_any_and_a_pinned_member_is_refused_at_create(connector):
    async def scenario():
        any_member = python_template("pass", ArmadaConfig(architecture="any", gang_id="mixed", gang_cardinality=2))
        pinned = python_template("pass", ArmadaConfig(architecture="amd64", gang_id="mixed", gang_cardinality=2))
        first = await connector.create(
            any_member, "s3://b/raw", task_execution_metadata=execution_metadata("mix", "m0")
        )
        second = await connector.create(pinned, "s3://b/raw", task_execution_metadata=execution_metadata("mix", "m1"))
        await connector.delete(first)
        return second, await connector.get(second)

    second, resource = run(scenario())
    assert second.refusal_code == "ArchitectureConflict" and not second.job_id
    assert resource.phase == TaskExecution.FAILED and "any of amd64,arm64" in resource.message


def test_any_lands_where_there_is_room_through_c0(c0, connector, pods_tmp_path):
    """The production path: a Flyte backend's CreateTask / GetTask over gRPC to a real c0 process."""
    stop = pods_tmp_path / "stop"

    async def block():
        return await fill(connector, "arm64", stop, "c0-fill")

    blockers = run(block())
    try:
        request = connector_pb2.CreateTaskRequest(
            template=python_template("print('from c0')", ArmadaConfig(architecture="any")),
            output_prefix="s3://bucket/raw/c0any/a0/0",
            task_execution_metadata=execution_metadata(run="c0any"),
        )
        meta = c0.CreateTask(request, timeout=30).resource_meta
        resource = poll_until_done(c0, meta, DONE, timeout=60)
    finally:
        run(finish(connector, blockers, stop))
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    info = json_format.MessageToDict(resource.custom_info)
    assert info["architecture"] == "amd64" and info["architectures_allowed"] == ["amd64", "arm64"]
    assert "on amd64 (node amd64-" in resource.message
