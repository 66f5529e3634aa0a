"""Our executor under real Armada (v0.22.7): real Armada's scheduler places jobs on the cluster file's
amd64 and arm64 nodes, and what the pods do comes back through Armada's own APIs."""

from __future__ import annotations

import contextlib
import pathlib
from typing import Iterator

import pytest
from armada_client.armada import job_pb2, submit_pb2
from armada_client.client import ArmadaClient

from support.armada_channels import armada_channel
from support.executor_parts import require_executor_stubs
from support.exposure import accepts_connections, descendants, listeners, non_loopback_address
from support.job_events import failed_event, job_set_events, kind
from support.pod_folders import file_pods_share
from support.pods import ARCH, ARM64_TOLERATION, arm64_pod, gang, item, pod, preemptible, submit_one, unique
from support.process_checks import is_alive
from support.real_armada import wait_until_queue_accepts
from support.real_armada_executor import (
    Bed,
    OurExecutor,
    our_executor,
    real_armada_bed,
    start_scheduler,
    stop_scheduler,
    tail,
)
from support.waiting import TERMINAL, wait_for_state, wait_until

require_executor_stubs()

QUEUE = "conformance"
"""One of the queues the bed creates."""
RETRYING = "retrying in"
"""What the executor logs when the scheduler can't be reached."""
EXECUTOR = "embedded"
"""The executor id of the default cluster file (its `executor` key's default)."""


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    with real_armada_bed() as running:
        yield running


@pytest.fixture(scope="module")
def client(bed: Bed) -> Iterator[ArmadaClient]:
    channel = armada_channel(bed.armada_url, bed.authorization())
    yield ArmadaClient(channel)
    channel.close()


@pytest.fixture(scope="module")
def executor(bed: Bed, client: ArmadaClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OurExecutor]:
    """Our executor, once real Armada schedules onto its nodes: until the scheduler's submit check has
    seen them, a job is rejected ("exceeds the total limit"), so probe jobs are sent until one runs."""
    with our_executor(bed, tmp_path_factory.mktemp("executor")) as running:
        wait_until_queue_accepts(client, QUEUE, 60)  # the server sees a new queue after its cache refresh
        try:
            wait_until(lambda: probe_runs(client), 120, "real Armada to schedule a job onto our executor's nodes")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{tail(running.log)}{bed.log_tail('scheduler')}") from None
        yield running


def probe_runs(client: ArmadaClient) -> bool:
    job_id, _ = submit(client, pod(["true"]))
    state = wait_for_state(client, job_id, *TERMINAL, timeout=60)
    return state == submit_pb2.SUCCEEDED


@pytest.fixture
def logs(bed: Bed, executor: OurExecutor):
    """Wrap waits so a failure shows the executor's and the scheduler's last lines."""

    @contextlib.contextmanager
    def shown() -> Iterator[None]:
        try:
            yield
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{tail(executor.log)}{bed.log_tail('scheduler')}") from None

    return shown


def submit(client: ArmadaClient, spec, job_set: str = "") -> tuple[str, str]:
    job_set = job_set or unique("executor")
    return submit_one(client, QUEUE, job_set, item(spec)), job_set


def runs_of(client: ArmadaClient, job_id: str) -> list[job_pb2.JobRunDetails]:
    """The job's runs, newest first."""
    return list(client.get_job_details([job_id]).job_details[job_id].job_runs)


def run_of(client: ArmadaClient, job_id: str) -> job_pb2.JobRunDetails | None:
    runs = runs_of(client, job_id)
    return runs[0] if runs else None


def test_the_executor_listens_on_nothing_another_machine_reaches(executor: OurExecutor):
    """It dials the scheduler; whatever it serves itself (a pod's log or ingress, if any) stays on loopback."""
    assert executor.process is not None
    remote = non_loopback_address()
    served = listeners(descendants(executor.process.pid))
    assert [listener for listener in served if not listener.loopback_only] == []
    assert [listener.port for listener in served if accepts_connections(remote, listener.port)] == []


def test_a_job_pinned_to_arm64_runs_on_an_arm64_node(client, logs):
    job_id, _ = submit(client, arm64_pod(["sh", "-c", "echo on arm64"]))
    with logs():
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=90)
        run = wait_until(lambda: run_of(client, job_id), 30, f"job {job_id}'s run details")
    assert run.node.startswith("arm64-"), run
    assert run.cluster == EXECUTOR


def test_a_job_pinned_to_amd64_runs_on_an_amd64_node(client, logs):
    job_id, _ = submit(client, pod(["true"], node_selector={ARCH: "amd64"}))
    with logs():
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=90)
        run = wait_until(lambda: run_of(client, job_id), 30, f"job {job_id}'s run details")
    assert run.node.startswith("amd64-"), run


def test_a_gang_with_the_arch_uniformity_label_lands_on_one_architecture(client, logs):
    """Both architectures are open to the members (they tolerate the arm64 taint): real Armada picks one
    for the whole gang by the `kubernetes.io/arch` label our executor reports."""
    job_set = unique("gang")
    annotations = gang(unique("g"), 2, ARCH)
    members = [item(pod(["true"], tolerations=[ARM64_TOLERATION]), annotations=annotations) for _ in range(2)]
    job_ids = [r.job_id for r in client.submit_jobs(QUEUE, job_set, members).job_response_items]
    with logs():
        for job_id in job_ids:
            wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=90)
        runs = [wait_until(lambda j=j: run_of(client, j), 30, f"job {j}'s run details") for j in job_ids]
    architectures = {run.node.split("-")[0] for run in runs}
    assert len(architectures) == 1 and architectures <= {"amd64", "arm64"}, [run.node for run in runs]


def test_a_failing_command_fails_the_job_with_its_exit_code_and_reason(client, logs):
    job_id, job_set = submit(client, pod(["sh", "-c", "echo no such input >&2; exit 3"]))
    with logs():
        wait_for_state(client, job_id, submit_pb2.FAILED, timeout=90)
        error = wait_until(lambda: client.get_job_errors([job_id]).job_errors.get(job_id), 30, "the job's error")
    assert "Container main failed with exit code 3 because Error: no such input" in error
    failed = failed_event(client, QUEUE, job_set, job_id)
    assert [(s.name, s.exitCode) for s in failed.container_statuses] == [("main", 3)]
    assert failed.node_name.startswith("amd64-")
    assert failed.failure_category == "uncategorized"  # the cluster file's default error categories


def test_the_event_stream_shows_the_pod_on_its_node(client, logs):
    job_id, job_set = submit(client, pod(["true"]))
    with logs():
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=90)
        wait_until(lambda: "succeeded" in kinds_of(client, job_set), 30, "the succeeded event")
    kinds = kinds_of(client, job_set)
    assert [k for k in kinds if k in ("leased", "pending", "running", "succeeded")] == [
        "leased",
        "pending",
        "running",
        "succeeded",
    ]
    running = next(m.message.running for m in job_set_events(client, QUEUE, job_set) if kind(m) == "running")
    assert (running.cluster_id, running.pod_name) == (EXECUTOR, f"armada-{job_id}-0")
    assert running.node_name.startswith("amd64-")  # (Armada's `succeeded` comes from its scheduler: no node)


def kinds_of(client: ArmadaClient, job_set: str) -> list[str]:
    return [kind(m) for m in job_set_events(client, QUEUE, job_set)]


def lines_in(path: pathlib.Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def pids_of(path: pathlib.Path) -> list[int] | None:
    try:
        words = path.read_text().split()
    except FileNotFoundError:
        return None
    return [int(w) for w in words] if len(words) == 2 else None


def tree_writer(pid_file: pathlib.Path) -> list[str]:
    """A pod whose shell starts a child and writes both pids, then waits: its whole tree must go on a stop."""
    return ["sh", "-c", f"sleep 600 & echo $$ $! > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; wait"]


def test_a_cancel_ends_the_pods_processes_and_the_job_reads_cancelled(client, logs, pods_tmp_path):
    pid_file = pods_tmp_path / "pids"
    job_id, job_set = submit(client, pod(tree_writer(pid_file), grace_seconds=2))
    with logs():
        pids = wait_until(lambda: pids_of(pid_file), 90, "the pod to start its processes")
        client.cancel_jobs(queue=QUEUE, job_set_id=job_set, job_id=job_id)
        wait_for_state(client, job_id, submit_pb2.CANCELLED, timeout=60)
        wait_until(lambda: not any(is_alive(p) for p in pids), 30, f"the pod's processes {pids} to end")


def test_a_preemption_ends_the_pod_and_the_job_reads_preempted(client, logs, pods_tmp_path):
    pid_file = pods_tmp_path / "pids"
    job_id, job_set = submit(client, preemptible(pod(tree_writer(pid_file), grace_seconds=2)))
    with logs():
        pids = wait_until(lambda: pids_of(pid_file), 90, "the pod to start its processes")
        wait_for_state(client, job_id, submit_pb2.RUNNING, timeout=30)
        client.preempt_jobs(queue=QUEUE, job_set_id=job_set, job_id=job_id)
        wait_for_state(client, job_id, submit_pb2.PREEMPTED, timeout=60)
        wait_until(lambda: not any(is_alive(p) for p in pids), 30, f"the pod's processes {pids} to end")


def test_a_scheduler_restart_is_ridden_out(bed, client, executor, logs, pods_tmp_path):
    release = pods_tmp_path / "release"
    job_id, _ = submit(client, pod(["sh", "-c", f"while [ ! -e {release} ]; do sleep 0.1; done"]))
    with logs():
        wait_for_state(client, job_id, submit_pb2.RUNNING, timeout=90)
        retries = executor.log.read_text().count(RETRYING)
        argv, cwd = stop_scheduler(bed)
        try:
            noticed = "the executor to notice the scheduler gone"
            wait_until(lambda: executor.log.read_text().count(RETRYING) > retries, 30, noticed)
            release.touch()  # the pod ends while the scheduler is away: its end waits in the executor
        finally:
            start_scheduler(bed, argv, cwd)
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=120)
        after, _ = submit(client, pod(["true"]))
        wait_for_state(client, after, submit_pb2.SUCCEEDED, timeout=120)


def test_a_stopped_executor_gives_its_runs_back_and_armada_runs_them_again(client, executor, logs, pods_tmp_path):
    """The returned run counts as an attempt; Armada leases the job again at once, to the same executor
    (its heartbeat is recent), and the restarted executor runs it."""
    starts, release = pods_tmp_path / "starts", pods_tmp_path / "release"
    file_pods_share(starts)  # both runs' pods write it
    waits = f"echo start >> {starts}; while [ ! -e {release} ]; do sleep 0.1; done"
    job_id, _ = submit(client, pod(["sh", "-c", waits]))
    with logs():
        wait_until(lambda: lines_in(starts) == 1, 90, "the pod to start")
        executor.stop()
        runs = wait_until(lambda: runs_of(client, job_id)[1:], 60, "a second run of the job")
        assert runs[0].state == job_pb2.RUNS_STATE_LEASE_RETURNED
        executor.start()
        wait_until(lambda: lines_in(starts) == 2, 90, "the pod to start again under the restarted executor")
        release.touch()
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=60)
