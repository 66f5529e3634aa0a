"""Local runs wait on the job's events (through the status view), bounded by backed-off delays,
and never wait after the end. Against the embedded server over gRPC; calls counted at the server."""

import asyncio
import itertools
import time

import pytest

import armada_flyte
from armada_flyte.local import run as local_run
from armada_flyte.local.console import CallName
from armada_flyte.local.run import poll_delays

from support.armada_templates import execution_metadata, python_template


@pytest.mark.pure
def test_delays_start_small_and_back_off_to_the_interval():
    delays = list(itertools.islice(poll_delays(0.05, 0.5), 9))
    assert delays[0] == 0.05
    assert all(b >= a for a, b in zip(delays, delays[1:]))
    assert delays[-1] == 0.5 and max(delays) == 0.5


@pytest.fixture(scope="module")
def armada():
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",))) as server:
        yield server


def test_the_end_is_seen_as_it_happens_without_polling_armada(armada):
    """A long poll interval: only the job set's events can make the wait end early."""
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(
        armada_url=armada.url, node_groups_preset="embedded", first_poll_seconds=30, poll_interval_seconds=30
    )
    connector = ArmadaConnector()

    async def scenario():
        meta = await connector.create(
            python_template("import time; time.sleep(1)"),
            "s3://b/raw",
            task_execution_metadata=execution_metadata(run="waits"),
        )
        try:
            outcome, _ = await local_run._wait_for_end(connector, meta, CallName("t", ":0", 0, "amd64"))
            return meta, outcome, time.time()
        finally:
            await connector.close()

    before = armada.calls.count("GetJobStatus")
    meta, outcome, seen_at = asyncio.run(scenario())
    assert outcome.terminal and outcome.info["armada_state"] == "SUCCEEDED", outcome.message
    ended = armada.plane.queries.find_job(meta.job_id).latest_run.finished_at
    assert seen_at - ended < 10.0  # not the 30 s poll interval (with room for a busy machine)
    assert armada.calls.count("GetJobStatus") - before <= 1  # at most the first look, before any event
