"""Every thread, channel and stream a connector starts ends when it is closed (issue 21, point 3).

A hundred connectors, each with settings of its own, each used (a `get`, which starts the status
view's thread, its channel and the job set's event stream) and closed: afterwards the process
holds no more threads and sockets than before. Half point at the embedded Armada, half at a
closed port (the failure paths must let go too).
"""

from __future__ import annotations

import pytest
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte.connector.service import ArmadaConnector
from armada_flyte.errors import ArmadaUnavailable

from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.c0_service import free_port
from support.resource_counts import assert_back_to, held

CONNECTORS = 100
DONE = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.ABORTED, TaskExecution.RETRYABLE_FAILED}


@pytest.fixture(scope="module")
def finished_job(armada):
    """Metadata of a job that ran to the end, so each connector's `get` follows its job set's stream."""

    async def submit_and_finish():
        armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded")
        connector = ArmadaConnector()
        try:
            meta = await connector.create(
                python_template("pass"), "s3://b/raw", task_execution_metadata=execution_metadata(action="ends")
            )
            resource = await wait_for(connector, meta, DONE)
        finally:
            await connector.close()
        assert resource.phase == TaskExecution.SUCCEEDED, resource.message
        return meta

    return run(submit_and_finish())


async def _use_and_close(index: int, armada_url: str, meta, reachable: bool) -> None:
    """A connector with settings no earlier one had (its timeouts vary), used once, then closed."""
    armada_flyte.configure(
        armada_url=armada_url,
        node_groups_preset="embedded",
        ack_timeout_seconds=30 + index,
        status_idle_seconds=60 + index,
        grpc_retries=0,
        grpc_timeout_seconds=5,
    )
    connector = ArmadaConnector()
    try:
        if reachable:
            resource = await connector.get(meta)
            assert resource.phase == TaskExecution.SUCCEEDED, resource.message
        else:
            with pytest.raises(ArmadaUnavailable):
                await connector.get(meta)
    finally:
        await connector.close()


def test_a_hundred_connectors_leave_no_thread_or_socket_behind(armada, finished_job):
    """All on one event loop, as in `c0`: a channel left open on it would stay open."""
    closed_port_url = f"127.0.0.1:{free_port()}"

    async def scenario():
        await _use_and_close(-1, armada.url, finished_job, reachable=True)  # grpc's process-wide threads start
        baseline = held()
        for index in range(CONNECTORS):
            reachable = index % 2 == 0
            await _use_and_close(index, armada.url if reachable else closed_port_url, finished_job, reachable)
        await assert_back_to(baseline)

    run(scenario())
