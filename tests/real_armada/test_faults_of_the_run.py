"""The run's own parts go away mid-run, on real Armada (`--armada real`, the session's bed with our executor)
and on the embedded server where the fault exists there: nothing is reported wrong, nothing lost.

Each fault runs through a real `c0` (the connector service over gRPC), driven as Flyte's backend drives
it (`support.flyte_backend`), with real pods: a0 for the tasks whose outcome depends on a0, trivial
commands where there are hundreds. What the user sees for each is in docs/troubleshooting.md
("The run's own parts go away").

- the executor killed (SIGKILL) while a task runs, a new one started: Armada leases the run again and the
  task ends once, SUCCEEDED, from its second execution (real Armada only: the embedded server has no
  executor of its own to kill);
- the executor gone longer than the scheduler's `executorTimeout` (a bed of its own, where it is 10 s and a
  retry policy runs lost runs again): the task follows the new run and ends once, SUCCEEDED;
- c0 killed with 500 tasks in flight and started again: every task ends from its metadata alone;
- the blob store down at the end of a task: never SUCCEEDED without a0's word; the message says the blob
  store is unreachable.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import pathlib
import sys
import time
import uuid
from typing import Any, Iterator

import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte import ArmadaConfig

from support.armada_channels import armada_channel, logged_in_to
from support.armada_templates import python_template
from support.backend_templates import registered_template
from support.c0_service import ARMADA_TASKS, TERMINAL, c0_env, c0_process, poll_until_done
from support.flyte_metadata import execution_metadata
from support.pod_folders import file_pods_share
from support.real_armada import (
    UP_TIMEOUT_SECONDS,
    bed_log_tails,
    bed_of_its_own,
    ensure_queues,
    uses_real_armada,
)
from support.real_armada_executor import kill_component, start_component
from support.waiting import TERMINAL as TERMINAL_STATES
from support.waiting import wait_for_state, wait_until

PROJECT = pathlib.Path(__file__).parent / "project"
IN_FLIGHT = 500
RESTART_BUDGET_SECONDS = 240.0
"""The c0 restart test's bound: 500 tasks created, c0 killed and started again, every task polled to its end."""


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The embedded server, or (`--armada real`) the session's bed, whose executor must be ours: the pods
    must really run (Armada's fake executor ends every pod SUCCEEDED)."""
    from armada_flyte.local.stack import local_stack

    armada_url = ""
    if uses_real_armada(request.config):
        if request.config.getoption("--real-armada-executor") != "ours":
            pytest.skip("needs pods that really run: the bed's executor must be ours (armada-flyte executor)")
        armada_url = request.getfixturevalue("real_armada")["ARMADA_URL"]
        ensure_queues(armada_url, ("flyte",))
    with local_stack(configure_connector=False, armada_url=armada_url) as endpoints:
        yield endpoints


@pytest.fixture
def armada_logs(request: pytest.FixtureRequest) -> Any:
    """The bed's component logs on real Armada ("" on the embedded server), for failure messages."""
    if not uses_real_armada(request.config):
        return lambda: ""
    bed = request.getfixturevalue("real_armada")
    return lambda: bed_log_tails(bed)


@pytest.fixture(scope="module")
def armada(stack: Any) -> Iterator[ArmadaClient]:
    channel = armada_channel(stack.armada_url)
    yield ArmadaClient(channel)
    channel.close()


def a0_task_request(stack: Any, task: Any, run: str, **inputs: Any) -> connector_pb2.CreateTaskRequest:
    """A CreateTask for `task` of the faults project as a backend sends it: template, code bundle and inputs
    in `stack`'s blob store."""
    from flyte._internal.runtime import convert, io

    prefix = f"s3://{stack.bucket}/faults/{run}/a0/0"

    async def prepare() -> Any:
        template = await registered_template(PROJECT, task, prefix)
        native = await convert.convert_from_native_to_inputs(task.native_interface, **inputs)
        await io.upload_inputs(native, io.inputs_path(prefix))
        return template

    return connector_pb2.CreateTaskRequest(
        template=asyncio.run(prepare()),
        output_prefix=prefix,
        task_execution_metadata=execution_metadata(run, "a0", task=task.name),
    )


def output_of(task: Any, prefix: str) -> Any:
    from flyte._internal.runtime import convert, io

    async def read() -> Any:
        outputs = await io.load_outputs(io.outputs_path(prefix))
        return await convert.convert_outputs_to_native(task.interface, outputs)

    return asyncio.run(read())


@pytest.fixture
def faults() -> Iterator[Any]:
    """The faults project's tasks (point Flyte at a blob store with `init_flyte` before using them)."""
    sys.path.insert(0, str(PROJECT))
    try:
        import faults

        yield faults
    finally:
        sys.path.remove(str(PROJECT))


def get_task(c0: Any, meta: bytes) -> Any:
    request = connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS)
    return c0.GetTask(request, timeout=30).resource


def poll_to_end(c0: Any, meta: bytes, timeout: float, seen: list[str], explain: Any = lambda: "") -> Any:
    """GetTask as the backend does until the phase is terminal; every phase reported goes to `seen`."""

    def note(resource: Any) -> None:
        seen.append(TaskExecution.Phase.Name(resource.phase))

    return poll_until_done(c0, meta, TERMINAL, timeout, on_poll=note, explain=explain, interval=0.2)


def job_id_of(meta: bytes) -> str:
    return json.loads(meta)["job_id"]


# ---- the executor killed mid-run ----


def test_an_executor_killed_mid_run_and_started_again_runs_the_task_again_and_it_ends_once_succeeded(
    request, stack, faults, armada, armada_logs, tmp_path, pods_tmp_path
):
    """SIGKILL of `armada-flyte executor` ends its pods with it (their shims get the parent-death signal).
    Armada still holds the run as leased to the executor's id, and leases it again on the first request of
    the executor started after it: the task runs a second time and succeeds. The backend sees RUNNING
    throughout, then SUCCEEDED once; never a failure for the killed execution."""
    if not uses_real_armada(request.config):
        pytest.skip("the embedded server runs its pods itself: it has no executor process to kill")
    bed = request.getfixturevalue("real_armada")
    state = pathlib.Path(bed["REAL_ARMADA_STATE"])
    starts = file_pods_share(pods_tmp_path / "starts")  # both runs' pods write it
    stack.init_flyte(PROJECT)
    run = f"killed-executor-{uuid.uuid4().hex[:8]}"
    create = a0_task_request(stack, faults.second_run_succeeds, run, folder=str(pods_tmp_path))
    seen: list[str] = []
    with c0_process(c0_env(stack.armada_url, stack.blob_endpoint), tmp_path / "c0.log") as c0:
        meta = c0.stub.CreateTask(create, timeout=60).resource_meta
        job_id = job_id_of(meta)

        def first_run_started() -> bool:
            seen.append(TaskExecution.Phase.Name(get_task(c0.stub, meta).phase))
            return starts.exists() and len(starts.read_text().splitlines()) == 1

        wait_until(first_run_started, 180, f"the task's first run to start (job {job_id})\n{armada_logs()}")
        argv, cwd = kill_component(state, "executor", whole_group=False)
        start_component(state, pathlib.Path(bed["REAL_ARMADA_LOGS"]), "executor", argv, cwd)
        resource = poll_to_end(c0.stub, meta, 180, seen, armada_logs)
    assert resource.phase == TaskExecution.SUCCEEDED, f"{resource.message}\n{armada_logs()}"
    assert output_of(faults.second_run_succeeds, create.output_prefix) == 2
    assert starts.read_text().splitlines() == ["start", "start"]
    assert [phase for phase in seen if phase in {"FAILED", "RETRYABLE_FAILED", "SUCCEEDED"}] == ["SUCCEEDED"], seen
    wait_for_state(armada, job_id, submit_pb2.SUCCEEDED, timeout=30)


EXECUTOR_TIMEOUT = "10s"


@pytest.fixture  # not module-wide: its credentials are the environment's only while its one test runs
def bed_losing_executors(request: pytest.FixtureRequest, bed_secrets_file: pathlib.Path) -> Iterator[dict[str, str]]:
    """A bed of its own whose scheduler expires an executor's runs after EXECUTOR_TIMEOUT of silence and retries
    them (Armada 0.22's retry engine, a policy for lease-expired runs): the session's bed keeps Armada's hour."""
    if not uses_real_armada(request.config) or request.config.getoption("--real-armada-executor") != "ours":
        pytest.skip("starts a real-Armada bed with our executor: run with --armada real")
    with (
        bed_of_its_own(
            REAL_ARMADA_SECRETS_FILE=str(bed_secrets_file),
            REAL_ARMADA_EXECUTOR_TIMEOUT=EXECUTOR_TIMEOUT,
            REAL_ARMADA_RETRY_POLICY="retry-lost-runs",
        ) as bed,
        logged_in_to(bed),
    ):
        yield bed


@pytest.mark.timeout(UP_TIMEOUT_SECONDS + 600)
def test_an_executor_gone_past_the_heartbeat_timeout_has_its_run_retried_and_the_task_follows_the_new_run(
    bed_losing_executors, faults, tmp_path, pods_tmp_path
):
    """The scheduler expires the run of an executor silent for `executorTimeout`; the retry policy requeues the
    job, whose failed event says `retryable`. The connector keeps the task in flight (it does not read that
    event as the end), and the task ends once, SUCCEEDED, from the run on the executor started after."""
    from armada_flyte.local.stack import local_stack

    bed = bed_losing_executors
    state, logs = pathlib.Path(bed["REAL_ARMADA_STATE"]), pathlib.Path(bed["REAL_ARMADA_LOGS"])
    starts = file_pods_share(pods_tmp_path / "starts")  # both runs' pods write it

    def explain() -> str:
        return bed_log_tails(bed)

    with local_stack(configure_connector=False, armada_url=bed["ARMADA_URL"]) as stack:
        stack.init_flyte(PROJECT)
        run = f"lost-executor-{uuid.uuid4().hex[:8]}"
        create = a0_task_request(stack, faults.second_run_succeeds, run, folder=str(pods_tmp_path))
        seen: list[str] = []
        channel = armada_channel(stack.armada_url)
        armada = ArmadaClient(channel)
        try:
            with c0_process(c0_env(stack.armada_url, stack.blob_endpoint), tmp_path / "c0.log") as c0:
                meta = c0.stub.CreateTask(create, timeout=60).resource_meta
                job_id = job_id_of(meta)

                def polled(condition: Any) -> Any:
                    def check() -> Any:
                        seen.append(TaskExecution.Phase.Name(get_task(c0.stub, meta).phase))
                        return condition()

                    return check

                first_started = polled(lambda: starts.exists() and len(starts.read_text().splitlines()) == 1)
                wait_until(first_started, 180, f"the task's first run to start (job {job_id})\n{explain()}")
                argv, cwd = kill_component(state, "executor", whole_group=False)
                requeued = polled(lambda: armada.get_job_status([job_id]).job_states[job_id] == submit_pb2.QUEUED)
                wait_until(requeued, 120, f"Armada to expire the lost run and requeue job {job_id}\n{explain()}")
                start_component(state, logs, "executor", argv, cwd)
                resource = poll_to_end(c0.stub, meta, 180, seen, explain)
            runs = armada.get_job_details([job_id]).job_details[job_id].job_runs
        finally:
            channel.close()
        assert resource.phase == TaskExecution.SUCCEEDED, f"{resource.message}\n{explain()}"
        assert output_of(faults.second_run_succeeds, create.output_prefix) == 2
    assert [phase for phase in seen if phase in {"FAILED", "RETRYABLE_FAILED", "SUCCEEDED"}] == ["SUCCEEDED"], seen
    assert len(runs) == 2, runs


# ---- c0 restarted with 500 tasks in flight ----


def trivial_task(run: str, number: int, go: pathlib.Path) -> connector_pb2.CreateTaskRequest:
    """Task `number` of a run of trivial pods that end once `go` exists: every tenth exits 3 (a failure), the
    others succeed. A quarter cpu each, so the amd64 nodes run 32 at once and the rest wait in Armada's queue."""
    code = f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.2)\n"
    code += "raise SystemExit(3)" if number % 10 == 0 else "pass"
    return connector_pb2.CreateTaskRequest(
        template=python_template(code, ArmadaConfig(architecture="amd64"), cpu="250m"),
        output_prefix=f"s3://flyte/raw/{run}/n{number}/0",
        task_execution_metadata=execution_metadata(run=run, action=f"n{number}"),
    )


def test_c0_killed_with_500_tasks_in_flight_and_started_again_ends_every_task_from_its_metadata(
    stack, armada, armada_logs, tmp_path, pods_tmp_path
):
    """The backend keeps the metadata each CreateTask returned and polls a new c0 with it, as it does
    after a c0 pod restarts: each task ends once, with its own phase, and no job is submitted twice.
    The pods wait for the test's go-ahead, so all 500 are in flight (32 running, the rest queued) when c0 goes."""
    run, go = f"c0-restart-{uuid.uuid4().hex[:8]}", pods_tmp_path / "go"
    env = c0_env(stack.armada_url, stack.blob_endpoint)
    log = tmp_path / "c0.log"
    began = time.monotonic()

    def create(c0: Any, number: int) -> bytes:
        return c0.stub.CreateTask(trivial_task(run, number, go), timeout=120).resource_meta

    with c0_process(env, log) as first, concurrent.futures.ThreadPoolExecutor(16) as pool:
        metas = list(pool.map(lambda number: create(first, number), range(IN_FLIGHT)))
        created = time.monotonic() - began
        first.kill()
    job_ids = [job_id_of(meta) for meta in metas]
    assert len(set(job_ids)) == IN_FLIGHT
    states = armada.get_job_status(job_ids).job_states
    assert not [job_id for job_id in job_ids if states[job_id] in TERMINAL_STATES], "all must be in flight"
    ended: dict[int, Any] = {}
    with c0_process(env, log) as second, concurrent.futures.ThreadPoolExecutor(8) as pool:
        go.touch()
        while len(ended) < IN_FLIGHT:
            waiting = [n for n in range(IN_FLIGHT) if n not in ended]
            for n, resource in zip(waiting, pool.map(lambda n: get_task(second.stub, metas[n]), waiting)):
                if resource.phase in TERMINAL:
                    ended[n] = resource
            elapsed = time.monotonic() - began
            assert elapsed < RESTART_BUDGET_SECONDS, (
                f"{IN_FLIGHT - len(ended)} tasks not ended after {elapsed:.0f} s\n{armada_logs()}"
            )
            time.sleep(0.5)
        again = {n: get_task(second.stub, metas[n]).phase for n in range(0, IN_FLIGHT, 7)}
    wrong = {
        n: resource.message
        for n, resource in ended.items()
        if resource.phase != (TaskExecution.FAILED if n % 10 == 0 else TaskExecution.SUCCEEDED)
    }
    assert not wrong, f"{len(wrong)} tasks ended with the wrong phase, e.g. {list(wrong.items())[:3]}"
    assert all("exit code 3" in ended[n].message for n in range(0, IN_FLIGHT, 10)), ended[0].message
    assert again == {n: ended[n].phase for n in again}, "a task's end must not change on a later poll"
    took = time.monotonic() - began
    print(f"{IN_FLIGHT} tasks through a c0 restart: created in {created:.0f} s, all ended after {took:.0f} s")


# ---- the blob store down at the end of a task ----


@pytest.mark.parametrize("goes_down", ["after the task ended", "while a0 writes its outputs"])
def test_a_blob_store_down_at_the_end_of_a_task_never_reads_as_succeeded(
    stack, faults, armada, armada_logs, tmp_path, pods_tmp_path, goes_down
):
    """Only a0's error file tells a task that raised from one that returned (a0 exits 0 either way), so an
    unreadable blob store keeps the task RUNNING for `error_read_grace_seconds`, then fails it retryably as
    BlobStoreUnreadable (a SYSTEM error), naming the store as unreachable."""
    from armada_flyte.local.stack import BUCKET, LocalBlobServer, LocalEndpoints

    blob = LocalBlobServer().start()
    try:
        own = LocalEndpoints(stack.armada_url, blob.endpoint, BUCKET, stack.queue)
        own.init_flyte(PROJECT)
        run = f"blob-down-{uuid.uuid4().hex[:8]}"
        create = a0_task_request(own, faults.returns_once_released, run, folder=str(pods_tmp_path))
        env = c0_env(
            stack.armada_url,
            blob.endpoint,
            error_read_grace_seconds="5",
            error_read_timeout_seconds="3",
        )
        seen: list[str] = []
        with c0_process(env, tmp_path / "c0.log") as c0:
            meta = c0.stub.CreateTask(create, timeout=60).resource_meta
            job_id = job_id_of(meta)
            wait_until((pods_tmp_path / "started").exists, 180, f"the task to start (job {job_id})\n{armada_logs()}")
            if goes_down == "after the task ended":
                (pods_tmp_path / "release").touch()
                wait_for_state(armada, job_id, submit_pb2.SUCCEEDED, timeout=120)
                blob.stop()
            else:
                blob.stop()
                (pods_tmp_path / "release").touch()
            resource = poll_to_end(c0.stub, meta, 180, seen, armada_logs)
    finally:
        blob.stop()
    assert "SUCCEEDED" not in seen, seen
    assert resource.phase == TaskExecution.RETRYABLE_FAILED, resource.message
    error = resource.custom_info["error"]
    assert (error["code"], error["kind"], error["recoverable"]) == ("BlobStoreUnreadable", "SYSTEM", True)
    assert f"the blob store at {blob.endpoint} is unreachable" in resource.message, resource.message
