"""A local run says when a task spills to its next architecture, in one line, as it happens (issue 32)."""

from __future__ import annotations

import asyncio
import re

import pytest

import armada_flyte
from armada_flyte import ArmadaConfig
from armada_flyte.local import run as local_run
from armada_flyte.local.console import CallName

from support.armada_templates import execution_metadata, python_template
from support.connector_blockers import fill, finish


@pytest.fixture(scope="module")
def armada():
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",))) as server:
        yield server


def test_a_spill_prints_one_line_naming_both_jobs_and_the_job_set(armada, pods_tmp_path, capsys):
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(
        armada_url=armada.url,
        node_groups_preset="embedded",
        first_poll_seconds=0.05,
        poll_interval_seconds=0.3,
        queued_report_after_seconds=0,
        queued_report_refresh_seconds=0.5,
        stream_task_logs=False,
    )
    connector = ArmadaConnector()
    stop = pods_tmp_path / "stop"
    prefer = ArmadaConfig(architecture=["arm64", "amd64"], spill_after=1)

    async def scenario():
        blockers = await fill(connector, "arm64", stop, "spill-line-fill")
        try:
            template = python_template("print('moved')", prefer, name="demo.prefer", cpu="1")
            meta = await connector.create(
                template, "s3://b/raw", task_execution_metadata=execution_metadata("spill-line")
            )
            name = CallName("demo.prefer", "(x=1)", 0, "arm64")
            outcome, _ = await local_run._wait_for_end(connector, meta, name)
            return meta, outcome, name
        finally:
            await finish(connector, blockers, stop)
            await connector.close()

    meta, outcome, name = asyncio.run(scenario())
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[demo.prefer(x=1)#0 ")]
    assert len(said) == 1, said
    assert re.fullmatch(
        rf"\[demo\.prefer\(x=1\)#0 arm64\] spilled from arm64 to amd64 after 1 s queued: no arm64 node had room "
        rf"\(Armada job {meta.job_id} cancelled; now job (\w+), job set {re.escape(meta.job_set_id)}\)",
        said[0],
    ), said
    moved = said[0].rsplit("now job ", 1)[1].split(",")[0]
    assert moved != meta.job_id and armada.job(moved).node_group == "amd64"
    assert str(name) == "[demo.prefer(x=1)#0 amd64]" and outcome.info["architecture"] == "amd64"
    assert local_run.current_job_id(meta, outcome) == moved


@pytest.mark.pure
def test_a_move_at_once_prints_its_own_why_and_how_the_first_job_ended():
    from types import SimpleNamespace

    from flyteidl2.core.execution_pb2 import TaskExecution

    from armada_flyte.armada_names import JobState
    from armada_flyte.connector.poll.outcome import JobOutcome

    why = "Armada rejected the arm64 job: no arm64 node can ever hold it (2 nodes: pod requires 2 cpu; x)"
    info = {"architecture": "amd64", "moved_from": "arm64", "why": why, "moved_by": "rejected"}
    message = f"moved from arm64 to amd64 at once: {why}; Armada job B is QUEUED"
    outcome = JobOutcome(TaskExecution.QUEUED, JobState.QUEUED, message, facts=info)
    line = local_run.spill_line(SimpleNamespace(job_set_id="s-prefer-1"), outcome, "A", "B")
    assert line == f"moved from arm64 to amd64 at once: {why} (Armada job A rejected; now job B, job set s-prefer-1)"
