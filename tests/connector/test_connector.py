"""ArmadaConnector create/get/delete/get_logs against the embedded Armada server (real gRPC)."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte import ArchitectureConflict, ArchitectureNotOffered, ArmadaConfig
from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.service import ArmadaConnector
from armada_flyte.errors import SubmissionRefused
from armada_flyte.pod_runner.process_tree import is_alive

from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.c0_service import free_port

NEEDS_BINOCULARS = pytest.mark.needs_binoculars
"""Reads logs through Binoculars: the embedded server's, or Armada's own on a real bed with Kubernetes (it reads
pods through the API server); a real bed without Kubernetes runs none."""
DONE = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.ABORTED, TaskExecution.RETRYABLE_FAILED}


def test_arm64_task_runs_on_the_arm64_node_group(connector):
    async def scenario():
        meta = await connector.create(
            python_template("print('hello')", ArmadaConfig(architecture="arm64")),
            "s3://b/raw",
            task_execution_metadata=execution_metadata(),
        )
        assert (meta.architecture, meta.architecture_source, meta.node_group) == ("arm64", "task", "arm64")
        assert meta.job_set_id == "flyte-run1" and meta.queue == "flyte"
        resource = await wait_for(connector, meta, DONE)
        return meta, resource

    meta, resource = run(scenario())
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    assert resource.custom_info["node_group"] == "arm64"
    assert resource.custom_info["node"].startswith("arm64")
    assert resource.custom_info["armada_state"] == "SUCCEEDED"


def test_task_without_architecture_takes_the_platform_default(connector):
    async def scenario():
        meta = await connector.create(
            python_template("pass"), "s3://b/raw", task_execution_metadata=execution_metadata(action="a1")
        )
        return meta, await wait_for(connector, meta, DONE)

    meta, resource = run(scenario())
    assert (meta.architecture, meta.architecture_source) == ("amd64", "platform")
    assert resource.phase == TaskExecution.SUCCEEDED
    assert resource.custom_info["node"].startswith("amd64")


def test_failing_container_is_failed_with_armadas_reason(connector):
    async def scenario():
        code = "import sys; print('boom: disk on fire', file=sys.stderr); sys.exit(3)"
        meta = await connector.create(
            python_template(code), "s3://b/raw", task_execution_metadata=execution_metadata(action="a2")
        )
        return await wait_for(connector, meta, DONE)

    resource = run(scenario())
    assert resource.phase == TaskExecution.FAILED
    assert "disk on fire" in resource.message


def test_architecture_not_offered_fails_before_any_job(armada, tmp_path):
    groups = tmp_path / "groups.yaml"
    groups.write_text("architectures:\n  amd64: {}\n")
    armada_flyte.configure(armada_url=armada.url, node_groups_file=str(groups))
    connector = ArmadaConnector()
    with pytest.raises(ArchitectureNotOffered) as info:
        run(
            connector.submit(
                python_template("pass", ArmadaConfig(architecture="arm64", job_set_id="never")), "s3://b/raw"
            )
        )
    assert "offered: amd64" in str(info.value)


def test_missing_toleration_is_rejected_with_the_taint_reason(armada, tmp_path):
    groups = tmp_path / "groups.yaml"
    groups.write_text("architectures:\n  amd64: {}\n  arm64: {}\n")  # no toleration for the arm64 taint
    armada_flyte.configure(armada_url=armada.url, node_groups_file=str(groups))
    connector = ArmadaConnector()

    async def scenario():
        meta = await connector.create(
            python_template("pass", ArmadaConfig(architecture="arm64")),
            "s3://b/raw",
            task_execution_metadata=execution_metadata(action="a3"),
        )
        return await wait_for(connector, meta, DONE)

    resource = run(scenario())
    assert resource.phase == TaskExecution.FAILED
    assert "rejected" in resource.message
    assert "taint kubernetes.io/arch=arm64:NoSchedule not tolerated" in resource.message


def test_unknown_queue_is_refused_with_the_fix(connector):
    with pytest.raises(SubmissionRefused) as info:
        run(connector.submit(python_template("pass", ArmadaConfig(queue="nope")), "s3://b/raw"))
    assert 'could not find queue "nope"' in str(info.value)
    assert "armadactl create queue" in str(info.value)


def test_missing_memory_is_refused_before_submitting(connector):
    template = python_template("pass")
    del template.container.resources.limits[1]
    with pytest.raises(armada_flyte.InvalidConfig, match="resources.memory"):
        run(connector.submit(template, "s3://b/raw"))


def test_delete_cancels_a_running_job_and_kills_its_process(connector, pods_tmp_path):
    pid_file = pods_tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"

    async def scenario():
        meta = await connector.create(
            python_template(code), "s3://b/raw", task_execution_metadata=execution_metadata(action="a4")
        )
        await wait_for(connector, meta, {TaskExecution.RUNNING})
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the job's process never started"
            await asyncio_sleep()
        await connector.delete(meta)
        resource = await wait_for(connector, meta, DONE)
        await connector.delete(meta)  # idempotent on a cancelled job
        return resource

    resource = run(scenario())
    assert resource.phase == TaskExecution.ABORTED
    pid = int(pid_file.read_text())
    # As in Armada, CANCELLED is recorded first and the pod is killed right after.
    deadline = time.monotonic() + 10
    while is_alive(pid):
        assert time.monotonic() < deadline, f"process {pid} of the cancelled job is still running"
        time.sleep(0.02)


@NEEDS_BINOCULARS
def test_get_logs_returns_the_containers_output(connector):
    async def scenario():
        meta = await connector.create(
            python_template("print('line one'); print('line two')"),
            "s3://b/raw",
            task_execution_metadata=execution_metadata(action="a5"),
        )
        await wait_for(connector, meta, DONE)
        return await connector.get_logs(meta)

    response = run(scenario())
    messages = [line.message for line in response.body.lines]
    assert "line one" in messages and "line two" in messages


def test_gang_members_asking_for_different_architectures_fail_at_create(connector):
    async def scenario():
        first = ArmadaConfig(gang_id="g1", gang_cardinality=2, architecture="arm64")
        other = ArmadaConfig(gang_id="g1", gang_cardinality=2, architecture="amd64")
        meta = await connector.create(
            python_template("pass", first),
            "s3://b/raw",
            task_execution_metadata=execution_metadata(run="gang-run", action="m1"),
        )
        try:
            with pytest.raises(ArchitectureConflict) as info:
                await connector.submit(
                    python_template("pass", other),
                    "s3://b/raw",
                    task_execution_metadata=execution_metadata(run="gang-run", action="m2"),
                )
        finally:
            await connector.delete(meta)
        return str(info.value)

    message = run(scenario())
    assert "g1-gang-run" in message and "arm64" in message and "amd64" in message


def test_a_refused_gang_member_leaves_no_claim_behind(connector):
    async def scenario():
        refused = ArmadaConfig(queue="nope", gang_id="g2", gang_cardinality=2, architecture="arm64")
        with pytest.raises(SubmissionRefused):
            await connector.submit(
                python_template("pass", refused),
                "s3://b/raw",
                task_execution_metadata=execution_metadata(run="g2run", action="m1"),
            )
        fixed = ArmadaConfig(gang_id="g2", gang_cardinality=2, architecture="amd64")
        meta = await connector.create(
            python_template("pass", fixed),
            "s3://b/raw",
            task_execution_metadata=execution_metadata(run="g2run", action="m2"),
        )
        await connector.delete(meta)
        return meta

    assert run(scenario()).architecture == "amd64"


# Untainted groups where a first-fit split is possible: one 1-cpu amd64 node, two 1-cpu arm64 nodes.
SPLITTABLE = {
    "node_sets": [
        {
            "name": "amd64",
            "nodes": 1,
            "labels": {"kubernetes.io/arch": "amd64"},
            "allocatable": {"cpu": "1", "memory": "4Gi"},
        },
        {
            "name": "arm64",
            "nodes": 2,
            "labels": {"kubernetes.io/arch": "arm64"},
            "allocatable": {"cpu": "1", "memory": "4Gi"},
        },
    ]
}


def test_gang_without_architecture_lands_on_one_architecture():
    from armada_flyte.embedded import Cluster, EmbeddedArmada, EmbeddedConfig

    config = ArmadaConfig(gang_id="pair", gang_cardinality=2)
    with EmbeddedArmada(EmbeddedConfig(cluster=Cluster.from_mapping(SPLITTABLE), port=0)) as armada:
        armada_flyte.configure(armada_url=armada.url, node_groups_preset="generic")  # no default architecture
        connector = ArmadaConnector()

        async def scenario():
            metas = [
                await connector.create(
                    python_template("pass", config, cpu="1"),
                    "s3://b/raw",
                    task_execution_metadata=execution_metadata(run="pair-run", action=f"m{i}"),
                )
                for i in range(2)
            ]
            return [await wait_for(connector, m, DONE) for m in metas]

        resources = run(scenario())
    assert [r.phase for r in resources] == [TaskExecution.SUCCEEDED] * 2
    # Only the arm64 group holds both: without the uniformity label the pair would be split.
    assert sorted(r.custom_info["node"] for r in resources) == ["arm64-0", "arm64-1"]


def test_resubmitting_the_same_attempt_reattaches(connector):
    async def scenario():
        template = python_template("pass")
        first = await connector.create(
            template, "s3://b/raw", task_execution_metadata=execution_metadata(run="again", action="a6")
        )
        second = await connector.create(
            template, "s3://b/raw", task_execution_metadata=execution_metadata(run="again", action="a6")
        )
        await wait_for(connector, first, DONE)
        return first.job_id, second.job_id

    first, second = run(scenario())
    assert first == second


def test_job_never_acknowledged_fails_after_the_ack_timeout(armada):
    armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded", ack_timeout_seconds=1)
    connector = ArmadaConnector()
    lost = ArmadaJobMetadata(job_id="01-never-submitted", job_set_id="x", queue="flyte", submitted_at=time.time() - 5)
    fresh = ArmadaJobMetadata(job_id="01-never-submitted", job_set_id="x", queue="flyte", submitted_at=time.time())
    assert run(connector.get(fresh)).phase == TaskExecution.QUEUED  # not visible yet: before what comes next
    resource = run(connector.get(lost))
    assert resource.phase == TaskExecution.FAILED
    assert "not acknowledged" in resource.message


def test_lookout_link_is_built_from_the_template(armada):
    armada_flyte.configure(armada_url=armada.url, lookout_url_template="http://127.0.0.1:8089/?job={job_id}&q={queue}")
    connector = ArmadaConnector()
    meta = ArmadaJobMetadata(job_id="abc", job_set_id="x", queue="flyte", submitted_at=time.time())
    links = run(connector.get(meta)).log_links
    assert [link.uri for link in links] == ["http://127.0.0.1:8089/?job=abc&q=flyte"]


def test_status_of_more_ids_than_armada_answers_at_once_is_chunked(armada):
    """The server refuses over 500 ids per call, so 1200 answered means the wrapper split them."""
    api = ArmadaApi(resolve_settings(armada_url=armada.url))
    states = run(api.status([f"unknown-{i}" for i in range(1200)]))
    assert len(states) == 1200 and set(states.values()) == {5}  # UNKNOWN


async def asyncio_sleep() -> None:
    import asyncio

    await asyncio.sleep(0.02)


@NEEDS_BINOCULARS
def test_logs_are_read_from_the_configured_binoculars_url(armada):
    binoculars = os.environ.get("ARMADA_FLYTE_BINOCULARS_URL") or armada.url  # a bed's own, else the embedded server
    armada_flyte.configure(armada_url=armada.url, binoculars_url=binoculars, node_groups_preset="embedded")
    connector = ArmadaConnector()

    async def scenario():
        meta = await connector.create(
            python_template("print('via binoculars')"),
            "s3://b/raw",
            task_execution_metadata=execution_metadata(action="l1"),
        )
        await wait_for(connector, meta, DONE)
        return await connector.get_logs(meta)

    assert "via binoculars" in [line.message for line in run(scenario()).body.lines]


def test_unreachable_log_service_points_at_lookout(armada):
    armada_flyte.configure(
        armada_url=armada.url,
        binoculars_url=f"127.0.0.1:{free_port()}",
        grpc_retries=0,
        lookout_url_template="http://127.0.0.1:8089/jobs/{job_id}",
    )
    meta = ArmadaJobMetadata(job_id="j1", job_set_id="x", queue="flyte")
    (line,) = [line.message for line in run(ArmadaConnector().get_logs(meta)).body.lines]
    assert "http://127.0.0.1:8089/jobs/j1" in line


def test_unreachable_log_service_without_lookout_says_what_to_set(armada):
    armada_flyte.configure(armada_url=armada.url, binoculars_url=f"127.0.0.1:{free_port()}", grpc_retries=0)
    meta = ArmadaJobMetadata(job_id="j1", job_set_id="x", queue="flyte")
    with pytest.raises(armada_flyte.ArmadaFlyteError, match="ARMADA_FLYTE_BINOCULARS_URL"):
        run(ArmadaConnector().get_logs(meta))


def test_an_unreadable_error_file_keeps_the_task_waiting_then_says_so(armada):
    """a0 exits 0 even when the function raised: "can't read error.pb" must not pass for success."""
    unreachable_store = f"http://127.0.0.1:{free_port()}"

    async def scenario(grace):
        armada_flyte.configure(
            armada_url=armada.url,
            node_groups_preset="embedded",
            blob_endpoint=unreachable_store,
            blob_access_key="k",
            blob_secret_key="s",
            blob_workload_identity=True,
            error_read_timeout_seconds=0.5,
            error_read_grace_seconds=grace,
        )
        connector = ArmadaConnector()
        template = python_template("pass")
        template.container.args.extend(["--outputs-path", "s3://flyte/raw/unread/a0/0"])
        meta = await connector.create(
            template, "s3://flyte/raw/unread/a0/0", task_execution_metadata=execution_metadata(run=f"unread{grace}")
        )
        deadline = time.monotonic() + 30
        while (resource := await connector.get(meta)).custom_info.get("armada_state") != "SUCCEEDED":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        return resource

    waiting = run(scenario(grace=300))
    assert waiting.phase == TaskExecution.RUNNING and "error.pb" in waiting.message
    settled = run(scenario(grace=0))
    assert (
        settled.phase == TaskExecution.RETRYABLE_FAILED
        and f"the blob store at {unreachable_store} is unreachable" in settled.message
    )


@pytest.mark.embedded_only
def test_a_job_the_status_api_does_not_know_past_the_ack_window_follows_its_events_and_is_not_lost():
    """Real Armada's job status API is fed by its lookout ingester; when that lags or stops, GetJobStatus
    answers UNKNOWN for jobs that exist (the embedded server's `visibility_delay`). Polled in bulk (no
    event stream), the task must not be failed as lost: its job set's events know the job."""
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, visibility_delay=600)) as server:
        armada_flyte.configure(
            armada_url=server.url, node_groups_preset="embedded", ack_timeout_seconds=1, status_event_streams=False
        )
        connector = ArmadaConnector()

        async def scenario():
            template = python_template("import time; time.sleep(4)", ArmadaConfig(architecture="amd64"))
            meta = await connector.create(template, "s3://b/raw", task_execution_metadata=execution_metadata())
            running = await wait_for(connector, meta, {TaskExecution.RUNNING} | DONE)
            ended = await wait_for(connector, meta, DONE)
            await connector.close()
            return running, ended

        running, ended = run(scenario())
    assert running.phase == TaskExecution.RUNNING, running.message
    assert "Armada job" in running.message and "is RUNNING by its job set's events" in running.message
    assert "does not know it" in running.message and "the lookout ingester" in running.message
    assert ended.phase == TaskExecution.SUCCEEDED, ended.message
    assert ended.custom_info["state_from"] == "events"
