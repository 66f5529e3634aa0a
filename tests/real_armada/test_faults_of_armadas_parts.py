"""Armada's own parts go away while real a0 tasks run, driven through a real `c0` as Flyte's backend
drives it: every task still ends once, with its right phase, and none is failed as lost.

On real Armada (`--armada real`) the faults strike a bed of this module's own: the one the environment
names (REAL_ARMADA_STATE: scripts/test.sh runs this module alone on a bed of its group), else one started
and stopped here, on free ports; `scripts/real-armada.sh stop|start|restart COMPONENT` stops and starts
one part in place. The server restart runs on the embedded server too
(its state kept in a state folder); there the pods die with the server, as Armada's executor's do
when their node goes. What the user sees for each fault: docs/troubleshooting.md, "Armada's parts go away".
"""

from __future__ import annotations

import os
import pathlib
import threading
from typing import Any, Callable, Iterator

import pytest
from flyteidl2.core.execution_pb2 import TaskExecution

from support import held_tasks
from support.armada_channels import logged_in_to
from support.c0_service import c0_env, free_port, running_c0
from support.real_armada import bed_log_tails, bed_of_its_own, bed_script, parse_assignments, uses_real_armada
from support.waiting import wait_until

COMPONENT_SECONDS = 600
"""Bound on stopping or starting one part (Pulsar's start takes minutes on a busy machine)."""
MANY = 50
"""Tasks in flight when Armada's server restarts."""
SOME = 20
"""Tasks in flight for the other faults (each a real a0 process: the machine's 2 cores are shared)."""
TASK_SECONDS = 600
"""Bound on a batch of held tasks reaching a phase (a0 processes start slowly on a loaded machine)."""
LOST = ("lost", "has not acknowledged")


def act(bed: dict[str, str], verb: str, component: str) -> None:
    """Stop, start or restart one part of this module's bed, failing with the script's words."""
    result = bed_script(
        verb, component, bed=bed, timeout=COMPONENT_SECONDS, REAL_ARMADA_WAIT_SECONDS=str(COMPONENT_SECONDS - 60)
    )
    assert result.returncode == 0, f"real-armada.sh {verb} {component}:\n{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def own_bed(request: pytest.FixtureRequest, bed_secrets_file: pathlib.Path) -> Iterator[dict[str, str]]:
    """Real Armada with our executor for this module alone, since it stops and starts its parts: the bed the
    environment names (scripts/test.sh gives this module's group one), else one started for it."""
    if not uses_real_armada(request.config):
        pytest.skip("stops and starts real Armada's parts: run with --armada real")
    if os.environ.get("REAL_ARMADA_STATE"):
        status = bed_script("status", bed={"REAL_ARMADA_STATE": os.environ["REAL_ARMADA_STATE"]})
        assert status.returncode == 0 and "EXITED" not in status.stdout, f"the environment's bed:\n{status.stdout}"
        bed = parse_assignments(status.stdout)
        with logged_in_to(bed):
            yield bed
        return
    with bed_of_its_own(REAL_ARMADA_SECRETS_FILE=str(bed_secrets_file)) as bed, logged_in_to(bed):
        yield bed


@pytest.fixture(scope="module")
def real_stack(own_bed: dict[str, str]) -> Iterator[Any]:
    from armada_flyte.local.stack import local_stack

    with local_stack(configure_connector=False, armada_url=own_bed["ARMADA_URL"]) as endpoints:
        yield endpoints


def c0_env_of(stack: Any, **settings: str) -> dict[str, str]:
    return c0_env(stack.armada_url, stack.blob_endpoint, **settings)


def assert_each_ended_once_and_right(c0: Any, tasks: held_tasks.HeldTasks, endings: held_tasks.Endings) -> None:
    wrong = held_tasks.wrong_endings(c0, tasks, endings)
    assert not wrong, "\n".join(wrong)
    assert not [m for m in endings.messages() if any(word in m for word in LOST)]


def running_batch(
    c0: Any, stack: Any, count: int, name: str, folder: pathlib.Path, logs: Callable[[], str]
) -> held_tasks.HeldTasks:
    """`count` held tasks created through c0 and all RUNNING."""
    tasks = held_tasks.prepare(stack, count, name, folder)
    held_tasks.create_all(c0, tasks)
    held_tasks.wait_until_all(c0, tasks, TaskExecution.RUNNING, TASK_SECONDS, logs)
    return tasks


# ---- Armada's server restarted ----
@pytest.mark.timeout(1800)
def test_a_server_restart_while_50_tasks_run_ends_each_task_once_and_right(
    own_bed, real_stack, tmp_path, pods_tmp_path
):
    logs = lambda: bed_log_tails(own_bed)  # noqa: E731
    with running_c0(c0_env_of(real_stack), tmp_path / "c0.log") as c0:
        tasks = running_batch(c0, real_stack, MANY, "server-restart", pods_tmp_path, logs)
        act(own_bed, "restart", "server")
        tasks.open_gate()
        endings = held_tasks.poll_to_the_end(c0, tasks, TASK_SECONDS, logs)
        assert_each_ended_once_and_right(c0, tasks, endings)


@pytest.fixture
def embedded_stack(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Any]:
    """The embedded server on a fixed port with its state in a folder, so it can restart where it was."""
    if uses_real_armada(request.config):
        pytest.skip("restarts the embedded server: run without --armada real")
    from armada_flyte.local.stack import local_stack

    with local_stack(configure_connector=False, armada_port=free_port(), state_dir=tmp_path / "state") as endpoints:
        yield endpoints


@pytest.mark.timeout(1800)
def test_an_embedded_server_restart_ends_each_running_task_once_as_its_pod_went(
    embedded_stack, tmp_path, pods_tmp_path
):
    """The embedded server runs its pods: they die with it, and after the restart Armada ends their jobs
    as its executor ends runs whose pods vanished. Each task then fails once with that reason, never
    as lost (the task's retries start it again, as for a node that went). SOME tasks, not MANY: this
    test runs in every suite run, on the default tier."""
    logs = lambda: ""  # noqa: E731
    with running_c0(c0_env_of(embedded_stack), tmp_path / "c0.log") as c0:
        tasks = running_batch(c0, embedded_stack, SOME, "embedded-restart", pods_tmp_path, logs)
        embedded_stack.server.stop()
        embedded_stack.server.start()
        tasks.open_gate()
        endings = held_tasks.poll_to_the_end(c0, tasks, TASK_SECONDS, logs)
    missing = "Pod is unexpectedly missing in Kubernetes"
    ended = {
        f"{held_tasks.phase_name(r.phase)}: {missing if missing in r.message else r.message}"
        for r in endings.ended.values()
    }
    assert ended == {f"FAILED: {missing}"}
    assert all(phases[-1] == "FAILED" and phases.count("FAILED") == 1 for phases in endings.phases.values())


# ---- Pulsar restarted ----
@pytest.mark.timeout(1800)
def test_tasks_running_and_created_across_a_pulsar_restart_end_once_and_right(
    own_bed, real_stack, tmp_path, pods_tmp_path
):
    """Creates made while Pulsar is down fail and are retried until it is back. Armada v0.22.7 may start
    extra jobs for such a create (docs/troubleshooting.md, "Armada's parts go away"); each task follows
    the job its create returned, and ends once."""
    logs = lambda: bed_log_tails(own_bed, ("executor", "scheduler", "server", "pulsar"))  # noqa: E731
    with running_c0(c0_env_of(real_stack), tmp_path / "c0.log") as c0:
        running = running_batch(c0, real_stack, SOME // 2, "pulsar-before", pods_tmp_path, logs)
        later = held_tasks.prepare(real_stack, SOME // 2, "pulsar-across", pods_tmp_path)
        act(own_bed, "stop", "pulsar")
        creating = threading.Thread(target=held_tasks.create_all, args=(c0, later, COMPONENT_SECONDS), daemon=True)
        creating.start()
        act(own_bed, "start", "pulsar")
        creating.join(COMPONENT_SECONDS)
        assert len(later.metas) == len(later.requests), f"creates after Pulsar's start: {later.retried_calls[-3:]}"
        running.open_gate()
        for tasks in (running, later):
            endings = held_tasks.poll_to_the_end(c0, tasks, TASK_SECONDS, logs)
            assert_each_ended_once_and_right(c0, tasks, endings)


# ---- Redis restarted ----
BULK_FALLBACK = "polling its jobs in bulk until it's back"
"""What c0 logs when a job set's event stream broke and its jobs are polled in bulk meanwhile."""


@pytest.mark.timeout(1800)
def test_a_redis_restart_breaks_the_event_streams_and_tasks_end_right_through_bulk_and_back(
    own_bed, real_stack, tmp_path, pods_tmp_path
):
    """Redis (Armada's event store) goes down while tasks run, and stays down until their job sets' event streams
    broke and c0 polls them in bulk; then it comes back, the streams resume, and every task ends once and right.
    A quick restart may not break a stream at all: Armada's Redis client retries a read (XREAD) for a moment
    before the server ends the stream UNAVAILABLE (`internal/server/event/event.go`, v0.22.7)."""
    logs = lambda: bed_log_tails(own_bed, ("executor", "eventingester", "server", "redis"))  # noqa: E731
    c0_log = tmp_path / "c0.log"
    with running_c0(c0_env_of(real_stack), c0_log) as c0:
        tasks = running_batch(c0, real_stack, SOME, "redis-restart", pods_tmp_path, logs)
        act(own_bed, "stop", "redis")
        try:
            wait_until(lambda: BULK_FALLBACK in c0_log.read_text(errors="replace"), COMPONENT_SECONDS, BULK_FALLBACK)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nc0:\n{c0_log.read_text(errors='replace')[-3000:]}\n{logs()}") from None
        finally:
            act(own_bed, "start", "redis")
        tasks.open_gate()
        endings = held_tasks.poll_to_the_end(c0, tasks, TASK_SECONDS, logs)
        assert_each_ended_once_and_right(c0, tasks, endings)
    said = c0_log.read_text(errors="replace")
    assert "streaming again" in said, said[-3000:]


# ---- the lookout ingester stopped ----
ACK_SECONDS = 15
"""c0's acknowledgement window in the ingester test: the ingester stays stopped well past it."""


@pytest.mark.timeout(1800)
def test_with_the_lookout_ingester_stopped_past_the_ack_window_no_task_is_failed_as_lost(
    own_bed, real_stack, tmp_path, pods_tmp_path
):
    """GetJobStatus (fed by the lookout ingester) answers UNKNOWN for every job created while it is
    stopped; the job sets' events still know them. Tasks past the stream cap (3) are polled in bulk,
    so they see only the UNKNOWN: the connector asks their events before calling them lost."""
    logs = lambda: bed_log_tails(own_bed, ("executor", "scheduler", "server", "lookoutingester"))  # noqa: E731
    env = c0_env_of(real_stack, ack_timeout_seconds=str(ACK_SECONDS), status_streams_max="3")
    act(own_bed, "stop", "lookoutingester")
    try:
        with running_c0(env, tmp_path / "c0.log") as c0:
            # A bulk-polled task reads RUNNING only once its events were asked: past the ack window.
            tasks = running_batch(c0, real_stack, SOME, "no-lookout", pods_tmp_path, logs)
            messages = [held_tasks.get(c0, meta).message for meta in tasks.metas]
            told = [m for m in messages if "Armada's job status API (GetJobStatus) does not know it" in m]
            assert len(told) >= SOME - 3 and all("lookout ingester" in m for m in told), messages
            tasks.open_gate()
            endings = held_tasks.poll_to_the_end(c0, tasks, TASK_SECONDS, logs)
            assert_each_ended_once_and_right(c0, tasks, endings)
    finally:
        act(own_bed, "start", "lookoutingester")
