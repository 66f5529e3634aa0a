"""The blob store goes down between a0 writing error.pb and the connector reading it.

a0 exits 0 even when the user's function raised; only error.pb says it failed. If the store can't
be read once the grace period is over, the task must end as a retryable SYSTEM failure naming the
blob store, never as SUCCEEDED. Real parts: the embedded Armada server running a real pod
process, moto's S3 server (stopped mid-run), and the connector in-process and as `c0`.
"""

from __future__ import annotations

import asyncio
import pathlib
import time

from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte.connector.service import ArmadaConnector
from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY, LocalBlobServer

from support.armada_templates import execution_metadata, python_template, run
from support.c0_service import TERMINAL, poll_until_done, running_c0
from support.error_pb_pods import ERROR_PB_WRITER
from support.waiting import wait_until

# The pod: write error.pb as a0 does for a raised exception, then wait for the test's go-ahead
# (a file) and exit 0, so the store can be stopped while the job still runs.
WRITE_ERROR_THEN_WAIT = (
    ERROR_PB_WRITER
    + """
import time
write_error_pb(execution_pb2.ContainerError(code="ValueError", message="bad input"))
go = sys.argv[sys.argv.index("--go") + 1]
while not os.path.exists(go):
    time.sleep(0.05)
"""
)


def _template(outputs: str, go: pathlib.Path):
    template = python_template(WRITE_ERROR_THEN_WAIT)
    template.container.args.extend(["--outputs-path", outputs, "--go", str(go)])
    return template


def _error_file_written(store: LocalBlobServer, outputs: str) -> bool:
    s3 = store.client()
    key = outputs.removeprefix(f"s3://{store.bucket}/") + "/error.pb"
    return s3.list_objects_v2(Bucket=store.bucket, Prefix=key).get("KeyCount", 0) > 0


def _stop_store_once_written(store: LocalBlobServer, outputs: str, go: pathlib.Path) -> None:
    wait_until(lambda: _error_file_written(store, outputs), timeout=60, what="the pod to write error.pb")
    store.stop()
    go.touch()


def _assert_system_retryable(phase: int, message: str) -> None:
    assert phase == TaskExecution.RETRYABLE_FAILED, message
    assert (
        "SYSTEM error" in message and "the blob store at http://127.0.0.1:" in message and "is unreachable" in message
    )
    assert "succeeded" not in message.lower()


def test_in_process_a_store_down_after_the_pod_wrote_error_pb_is_a_retryable_system_failure(
    armada, store, pods_tmp_path
):
    outputs, go = "s3://flyte/raw/down/a0/0", pods_tmp_path / "go"
    armada_flyte.configure(
        armada_url=armada.url,
        node_groups_preset="embedded",
        blob_endpoint=store.endpoint,
        blob_access_key=ACCESS_KEY,
        blob_secret_key=SECRET_KEY,
        blob_credentials_secret=BLOB_CREDENTIALS_SECRET,
        error_read_timeout_seconds=0.5,
        error_read_grace_seconds=3,  # long enough to see the wait under load, short for the test
    )

    async def scenario():
        connector = ArmadaConnector()
        meta = await connector.create(
            _template(outputs, go), outputs, task_execution_metadata=execution_metadata(run="down")
        )
        await asyncio.to_thread(_stop_store_once_written, store, outputs, go)
        seen = []
        deadline = time.monotonic() + 60
        while not (outcome := await connector.poll(meta)).terminal:
            seen.append(outcome)
            assert time.monotonic() < deadline, outcome.message
            await asyncio.sleep(0.05)
        return seen, outcome

    seen, outcome = run(scenario())
    assert outcome.info["armada_state"] == "SUCCEEDED"
    assert outcome.info["error"]["kind"] == "SYSTEM" and outcome.info["error"]["recoverable"]
    _assert_system_retryable(outcome.phase, outcome.message)
    # within the grace period the task kept waiting (a0 may have failed), not ended
    assert any("ended" in o.message and o.phase == TaskExecution.RUNNING for o in seen)


def test_through_c0_a_store_down_after_the_pod_wrote_error_pb_is_a_retryable_system_failure(
    armada, store, tmp_path, pods_tmp_path
):
    outputs, go = "s3://flyte/raw/c0down/a0/0", pods_tmp_path / "go"
    env = {
        "ARMADA_URL": armada.url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "FLYTE_BLOB_ENDPOINT": store.endpoint,
        "FLYTE_BLOB_ACCESS_KEY": ACCESS_KEY,
        "FLYTE_BLOB_SECRET_KEY": SECRET_KEY,
        "ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET": BLOB_CREDENTIALS_SECRET,
        "ARMADA_FLYTE_ERROR_READ_TIMEOUT_SECONDS": "0.5",
        "ARMADA_FLYTE_ERROR_READ_GRACE_SECONDS": "1",
    }
    with running_c0(env, tmp_path / "c0.log") as c0:
        request = connector_pb2.CreateTaskRequest(
            template=_template(outputs, go),
            output_prefix=outputs,
            task_execution_metadata=execution_metadata(run="c0down"),
        )
        meta = c0.CreateTask(request, timeout=30).resource_meta
        _stop_store_once_written(store, outputs, go)

        resource = poll_until_done(c0, meta, TERMINAL, 60)
    _assert_system_retryable(resource.phase, resource.message)
