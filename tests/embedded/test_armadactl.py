"""Armada's own `armadactl` (built from Armada's source at the pinned version) against `armada-flyte dev`."""

from __future__ import annotations

import pathlib
import re
import subprocess
import uuid

import pytest
import yaml

from support.waiting import wait_for_state

JOB = {
    "priority": 0,
    "namespace": "default",
    "podSpec": {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "sleeper",
                "image": "busybox:latest",
                "args": ["sleep", "600"],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "limits": {"cpu": "100m", "memory": "64Mi"},
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def armadactl(armada_tools, dev_server, tmp_path_factory):
    """Runs armadactl with a config pointing at the embedded server; returns (exit code, output)."""
    config = tmp_path_factory.mktemp("armadactl") / "armadactl.yaml"
    config.write_text(f"armadaUrl: {dev_server}\nforceNoTls: true\n")
    binary = pathlib.Path(armada_tools["ARMADA_TOOLS_BIN"], "armadactl")

    def run(*args: str, timeout: float = 60) -> tuple[int, str]:
        done = subprocess.run(
            [str(binary), "--config", str(config), *args], capture_output=True, text=True, timeout=timeout
        )
        return done.returncode, done.stdout + done.stderr

    return run


def ok(result: tuple[int, str]) -> str:
    code, output = result
    assert code == 0, output
    return output


@pytest.fixture
def queue(armadactl):
    name = f"ctl-{uuid.uuid4().hex[:8]}"
    ok(armadactl("create", "queue", name, "--priority-factor", "2"))
    return name


def submit(armadactl, queue: str, job_set: str, tmp_path, count: int = 1) -> list[str]:
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump({"queue": queue, "jobSetId": job_set, "jobs": [JOB] * count}))
    return re.findall(r"Submitted job with id (\w+)", ok(armadactl("submit", str(path))))


def test_queues_are_created_read_updated_and_deleted(armadactl, queue):
    shown = ok(armadactl("get", "queue", queue))
    assert f"name: {queue}" in shown and "priorityFactor: 2" in shown
    ok(armadactl("update", "queue", queue, "--priority-factor", "5"))
    assert "priorityFactor: 5" in ok(armadactl("get", "queue", queue))
    ok(armadactl("delete", "queue", queue))
    code, output = armadactl("get", "queue", queue)
    assert code != 0 and "code = NotFound" in output


def test_a_submitted_job_file_runs_and_is_cancelled(armadactl, queue, tmp_path):
    (job_id,) = submit(armadactl, queue, "set-cancel", tmp_path)
    ok(armadactl("cancel", "job", queue, "set-cancel", job_id))
    events = ok(armadactl("watch", queue, "set-cancel", "--exit-if-inactive", timeout=120))
    assert "JobQueuedEvent" in events and "JobCancelledEvent" in events


def test_a_job_set_is_cancelled_whole(armadactl, queue, tmp_path):
    ids = submit(armadactl, queue, "set-all", tmp_path, count=3)
    assert len(ids) == 3
    ok(armadactl("cancel", "job-set", queue, "set-all"))
    events = ok(armadactl("watch", queue, "set-all", "--exit-if-inactive", timeout=120))
    assert events.count("JobCancelledEvent") == 3


def test_a_job_is_reprioritized(armadactl, queue, tmp_path):
    (job_id,) = submit(armadactl, queue, "set-prio", tmp_path)
    ok(armadactl("reprioritize", "job", queue, "set-prio", job_id, "5"))
    ok(armadactl("cancel", "job", queue, "set-prio", job_id))
    events = ok(armadactl("watch", queue, "set-prio", "--exit-if-inactive", timeout=120))
    assert "JobReprioritizedEvent" in events


def test_a_running_job_is_preempted(armadactl, queue, tmp_path, dev_server):
    import grpc
    from armada_client.armada import submit_pb2
    from armada_client.client import ArmadaClient

    preemptible = {**JOB, "podSpec": {**JOB["podSpec"], "priorityClassName": "armada-preemptible"}}
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump({"queue": queue, "jobSetId": "set-preempt", "jobs": [preemptible]}))
    (job_id,) = re.findall(r"Submitted job with id (\w+)", ok(armadactl("submit", str(path))))
    with grpc.insecure_channel(dev_server) as channel:
        client = ArmadaClient(channel)
        wait_for_state(client, job_id, submit_pb2.RUNNING)
        ok(armadactl("preempt", "job", queue, "set-preempt", job_id, "testing preemption"))
        # Its events end preempted -> failed (Armada's scheduler.go); the state reads either.
        wait_for_state(client, job_id, submit_pb2.PREEMPTED, submit_pb2.FAILED)


def test_jobs_on_a_node_are_cancelled_and_preempted(armadactl, queue, tmp_path, dev_server):
    """`armadactl cancel node` / `preempt node` call the Node service (the default cluster's executor is
    `embedded`); given no queues, armadactl fills in every queue itself (internal/armadactl/cancel.go)."""
    import grpc
    from armada_client.armada import submit_pb2
    from armada_client.client import ArmadaClient

    pinned = {**JOB["podSpec"], "nodeSelector": {"kubernetes.io/hostname": "amd64-1"}}
    jobs = [{**JOB, "podSpec": pinned}, {**JOB, "podSpec": {**pinned, "priorityClassName": "armada-preemptible"}}]
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump({"queue": queue, "jobSetId": "set-node", "jobs": jobs}))
    default_job, preemptible_job = re.findall(r"Submitted job with id (\w+)", ok(armadactl("submit", str(path))))
    with grpc.insecure_channel(dev_server) as channel:
        client = ArmadaClient(channel)
        for job_id in (default_job, preemptible_job):
            wait_for_state(client, job_id, submit_pb2.RUNNING)
        ok(armadactl("preempt", "node", "amd64-1", "--executor", "embedded", "--queues", queue, "-a"))
        wait_for_state(client, preemptible_job, submit_pb2.PREEMPTED, submit_pb2.FAILED)
        assert client.get_job_status([default_job]).job_states[default_job] == submit_pb2.RUNNING
        ok(armadactl("cancel", "node", "amd64-1", "--executor", "embedded", "--priority-classes", "armada-default"))
        wait_for_state(client, default_job, submit_pb2.CANCELLED)
