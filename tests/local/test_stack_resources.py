"""A local run's stack lets go of what it started when it ends (issue 21, point 3), the connector's
status view included: Flyte's registered connector outlives the stack, and its view must not keep
following a server that has stopped."""

from __future__ import annotations

from flyte.connectors import ConnectorRegistry
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte.connector.service  # noqa: F401  (registers the connector local runs use)
from armada_flyte.local.stack import local_stack
from armada_flyte.spec import TASK_TYPE

from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.resource_counts import assert_repeats_leave_nothing_behind, held
from support.waiting import wait_until

STACKS = 3
DONE = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.ABORTED, TaskExecution.RETRYABLE_FAILED}


def _views() -> int:
    return held().threads.count("armada-status-view")


def _run_a_task_on_a_stack() -> None:
    connector = ConnectorRegistry.get_connector(TASK_TYPE)
    before = _views()  # a view an earlier test's connector still holds is not this stack's
    with local_stack(blob_store=False):

        async def submit_and_finish():
            meta = await connector.create(
                python_template("pass"), "s3://b/raw", task_execution_metadata=execution_metadata(action="stack")
            )
            return await wait_for(connector, meta, DONE)

        assert run(submit_and_finish()).phase == TaskExecution.SUCCEEDED
    wait_until(lambda: _views() <= before, what="the stack's status view thread to end")


def test_local_stacks_one_after_another_leave_no_view_thread_socket_or_child_behind():
    assert_repeats_leave_nothing_behind(_run_a_task_on_a_stack, STACKS)
