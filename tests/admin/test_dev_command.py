"""`armada-flyte dev`: starts the server, prints where it listens, and stops cleanly on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.log_client import JobLogClient

from armada_flyte.armada_names import JobState
from armada_flyte.embedded.store.state_file import saved_job_states

from support.job_events import job_of, job_set_events, kind
from support.pods import item, pod, python, submit_one
from support.process_checks import is_alive, pids_in_log
from support.process_output import Output
from support.waiting import job_error, wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only

DEV = [sys.executable, "-m", "armada_flyte.admin.cli", "dev"]
CLI = [*DEV, "--ephemeral"]
"""Most tests want a server of their own that keeps nothing; the state tests pass --state-dir instead."""


@pytest.fixture
def server():
    process = subprocess.Popen(
        [*CLI, "--port", "0", "--queue", "cli"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Ctrl-C as a terminal delivers it, however the suite was started (a background job inherits it ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    output = Output(process)
    yield process, output
    if process.poll() is None:
        process.kill()
        process.wait()


def test_prints_endpoint_queue_and_node_sets(server) -> None:
    process, output = server
    output.wait_for(r"Press Ctrl-C to stop")
    text = "\n".join(output.lines)
    assert re.search(r"listening on 127\.0\.0\.1:\d+ \(pod runner: process\)", text)
    assert "queue: cli" in text
    assert "amd64: 2 nodes" in text and "taints kubernetes.io/arch=arm64:NoSchedule" in text


def test_starts_a_blob_store_and_prints_the_settings_flyte_needs(server) -> None:
    import boto3

    _, output = server
    endpoint = output.wait_for(
        r"export FLYTE_BLOB_ENDPOINT=(http://127\.0\.0\.1:\d+) FLYTE_BLOB_ACCESS_KEY=(\S+) FLYTE_BLOB_SECRET_KEY=(\S+)"
    )
    output.wait_for(r"export FLYTE_AWS_ENDPOINT=http://127\.0\.0\.1:\d+ .*ARMADA_FLYTE_RAW_DATA_PATH=s3://flyte/raw")
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint.group(1),
        aws_access_key_id=endpoint.group(2),
        aws_secret_access_key=endpoint.group(3),
        region_name="us-east-1",
    )
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["flyte"]


def test_no_blob_store_when_asked() -> None:
    process = subprocess.Popen(
        [*CLI, "--port", "0", "--no-blob-store"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = Output(process)
    try:
        output.wait_for(r"Press Ctrl-C to stop")
        assert not any("FLYTE_BLOB_ENDPOINT" in line for line in output.lines)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_serves_the_view_of_every_job_set_of_its_server(server) -> None:
    import urllib.request

    process, output = server
    view = output.wait_for(r"^view: (http://127\.0\.0\.1:\d+/)$").group(1)
    url = output.wait_for(r"listening on (127\.0\.0\.1:\d+)").group(1)
    with grpc.insecure_channel(url) as channel:
        client = ArmadaClient(channel)
        job_id = submit_one(client, "cli", "seen-by-the-view", item(pod(["true"])))
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    with urllib.request.urlopen(view, timeout=30) as response:
        page = response.read().decode()
    assert 'data-queue="cli" data-job-set="seen-by-the-view"' in page
    assert f'data-job-id="{job_id}" data-state="SUCCEEDED"' in page


def test_no_view_when_asked() -> None:
    command = [*CLI, "--port", "0", "--no-blob-store", "--no-view"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = Output(process)
    try:
        output.wait_for(r"^view: off \(--no-view\)$")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_paused_leaves_scheduled_jobs_leased() -> None:
    command = [*CLI, "--port", "0", "--no-blob-store", "--paused"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = Output(process)
    try:
        url = output.wait_for(r"listening on (127\.0\.0\.1:\d+)").group(1)
        output.wait_for(r"^paused: scheduled jobs stay LEASED")
        with grpc.insecure_channel(url) as channel:
            client = ArmadaClient(channel)
            first = submit_one(client, "flyte", "js", item(pod(["true"])))
            wait_for_state(client, first, submit_pb2.LEASED)
            second = submit_one(client, "flyte", "js", item(pod(["true"])))
            wait_for_state(client, second, submit_pb2.LEASED)  # a later pass: the first had time to start
            assert client.get_job_status([first]).job_states[first] == submit_pb2.LEASED
            assert "pending" not in [kind(m) for m in job_set_events(client, "flyte", "js") if job_of(m) == first]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_sigterm_stops_it_and_kills_running_pods(server) -> None:
    process, output = server
    url = output.wait_for(r"listening on (127\.0\.0\.1:\d+)").group(1)
    output.wait_for(r"Press Ctrl-C to stop")
    with grpc.insecure_channel(url) as channel:
        client = ArmadaClient(channel)
        code = "import os, time; print('main', os.getpid(), flush=True); time.sleep(300)"
        job_id = submit_one(client, "cli", "js", item(pod(python(code))))
        wait_for_state(client, job_id, submit_pb2.RUNNING)
        pid = wait_until(lambda: _pod_pid(url, job_id), what="the pod's pid in its log")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0
    output.wait_for(r"^stopped$")
    wait_until(lambda: not is_alive(pid), what="the pod's process to be gone")


def test_ctrl_c_stops_it(server) -> None:
    process, output = server
    output.wait_for(r"Press Ctrl-C to stop")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=20) == 0


def test_a_bad_cluster_file_fails_naming_the_field(tmp_path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text("node_sets:\n  - name: a\n    nodes: 1\n    labels: {}\n    allocatable: {cpu: '1', memory: 1Gi}\n")
    done = subprocess.run([*CLI, "--port", "0", "--cluster", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "node_sets.0.labels" in done.stderr and "kubernetes.io/arch" in done.stderr


def _pod_pid(url: str, job_id: str) -> int | None:
    pids = pids_in_log([line.line for line in JobLogClient(url, job_id, disable_ssl=True).logs()], "main")
    return pids[0] if pids else None


DETACHED_CHILD = (  # each pid file appears whole (written aside, then renamed), never empty to a reader
    "import os, sys, time\n"
    "folder = sys.argv[1]\n"
    "def note(name):\n"
    "    open(f'{folder}/.{name}', 'w').write(str(os.getpid()))\n"
    "    os.replace(f'{folder}/.{name}', f'{folder}/{name}')\n"
    "note('main')\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        note('detached')\n"
    "        time.sleep(300)\n"
    "    os._exit(0)\n"
    "time.sleep(300)\n"
)


def test_no_pod_process_survives_a_sigkill_of_the_server(pods_tmp_path) -> None:
    tmp_path = pods_tmp_path  # the pod writes its pids there
    process = subprocess.Popen(
        [*CLI, "--port", "0", "--queue", "cli", "--no-blob-store"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = Output(process).wait_for(r"listening on (127\.0\.0\.1:\d+)").group(1)
        with grpc.insecure_channel(url) as channel:
            client = ArmadaClient(channel)
            job_id = submit_one(client, "cli", "kill", item(pod(python(DETACHED_CHILD), args=[str(tmp_path)])))
            wait_for_state(client, job_id, submit_pb2.RUNNING)
            pids = wait_until(
                lambda: (
                    [int((tmp_path / n).read_text()) for n in ("main", "detached")]
                    if (tmp_path / "detached").exists()
                    else None
                ),
                what="the pod and its detached grandchild to start",
            )
            process.kill()  # SIGKILL: the server gets no chance to clean up
            process.wait()
        wait_until(lambda: not any(is_alive(pid) for pid in pids), what=f"pod processes {pids} to end")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_pods_cannot_read_the_servers_environment(tmp_path) -> None:
    import os

    env = {**os.environ, "ARMADA_FLYTE_TEST_SERVER_SECRET": "do-not-leak"}
    process = subprocess.Popen(
        [*CLI, "--port", "0", "--queue", "cli", "--no-blob-store"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    probe = (
        "import os, sys\n"
        "for pid in (int(sys.argv[1]), os.getppid()):\n"
        "    try:\n"
        "        if b'do-not-leak' in open(f'/proc/{pid}/environ', 'rb').read():\n"
        "            sys.exit(3)\n"
        "    except PermissionError:\n"
        "        pass\n"
    )
    try:
        url = Output(process).wait_for(r"listening on (127\.0\.0\.1:\d+)").group(1)
        with grpc.insecure_channel(url) as channel:
            client = ArmadaClient(channel)
            job_id = submit_one(client, "cli", "env", item(pod(python(probe), args=[str(process.pid)])))
            wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    finally:
        process.kill()
        process.wait()


def test_secrets_from_flags_and_a_file_are_the_clusters_secrets(tmp_path) -> None:
    from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

    secrets_file = tmp_path / "secrets.yaml"
    secrets_file.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: from-file}\nstringData: {k: file-value}\n")
    command = [*CLI, "--port", "0", "--no-blob-store", "--secret", "creds", "api_key=v1", "token=t=2"]
    process = subprocess.Popen(
        [*command, "--secret", "other", "x=y", "--secrets-file", str(secrets_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output = Output(process)
    try:
        url = output.wait_for(r"listening on (127\.0\.0\.1:\d+)").group(1)
        output.wait_for(r"secrets: creds, from-file, other")
        check = (
            "import os, sys; "
            "sys.exit(0 if (os.environ['A'], os.environ['T'], os.environ['F']) == ('v1', 't=2', 'file-value') else 3)"
        )
        spec = pod(python(check))
        for name, secret, key in (("A", "creds", "api_key"), ("T", "creds", "token"), ("F", "from-file", "k")):
            selector = core.SecretKeySelector(localObjectReference=core.LocalObjectReference(name=secret), key=key)
            spec.containers[0].env.append(core.EnvVar(name=name, valueFrom=core.EnvVarSource(secretKeyRef=selector)))
        channel = grpc.insecure_channel(url)
        client = ArmadaClient(channel)
        job_id = submit_one(client, "flyte", "secrets", item(spec))
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=30)
        channel.close()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def _start_persistent(state_dir) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [*DEV, "--port", "0", "--queue", "cli", "--no-blob-store", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output = Output(process)
    url = output.wait_for(r"listening on (127\.0\.0\.1:\d+)").group(1)
    output.wait_for(r"Press Ctrl-C to stop")
    assert f"state: {state_dir} (kept across restarts)" in output.lines
    return process, url


def _job_events(client, job_set: str, job_id: str) -> list[tuple[str, str]]:
    return [(m.id, kind(m)) for m in job_set_events(client, "cli", job_set) if job_of(m) == job_id]


def test_after_a_sigkill_a_restart_on_its_state_ends_the_lost_jobs_as_armada_does(tmp_path, pods_tmp_path) -> None:
    """kill -9 with a pod running: no pod process survives, and the server started again on the same
    state folder still has the queues, the job that had succeeded (with its events and log), and
    fails the job whose pod died with it as Armada's executor reports a vanished pod
    (internal/executor/service/pod_issue_handler.go), which the connector reports as FAILED."""
    from flyteidl2.core.execution_pb2 import TaskExecution

    import armada_flyte
    from armada_flyte.connector.model.metadata import ArmadaJobMetadata
    from armada_flyte.connector.service import ArmadaConnector

    from support.armada_templates import run

    state_dir = tmp_path / "state"
    pod_dir = pods_tmp_path  # the pod writes its pids there
    process, url = _start_persistent(state_dir)
    try:
        with grpc.insecure_channel(url) as channel:
            client = ArmadaClient(channel)
            client.create_queue(client.create_queue_request(name="kept", priority_factor=3))
            done = submit_one(client, "cli", "before", item(pod(python("print('finished before the kill')"))))
            wait_for_state(client, done, submit_pb2.SUCCEEDED)
            done_events = _job_events(client, "before", done)
            lost = submit_one(client, "cli", "lost", item(pod(python(DETACHED_CHILD), args=[str(pod_dir)])))
            wait_for_state(client, lost, submit_pb2.RUNNING)
            pids = wait_until(
                lambda: (
                    [int((pod_dir / n).read_text()) for n in ("main", "detached")]
                    if (pod_dir / "detached").exists()
                    else None
                ),
                what="the pod and its detached grandchild to start",
            )
            # The state is written behind the API by a few milliseconds: wait until it has the run.
            wait_until(lambda: saved_job_states(state_dir).get(lost) == JobState.RUNNING, what="the running job saved")
            process.kill()  # SIGKILL: the server gets no chance to clean up or write anything more
            process.wait()
        wait_until(lambda: not any(is_alive(pid) for pid in pids), what=f"pod processes {pids} to end")

        process, url = _start_persistent(state_dir)
        with grpc.insecure_channel(url) as channel:
            client = ArmadaClient(channel)
            assert client.get_queue("kept").priority_factor == 3
            assert client.get_job_status([done, lost]).job_states == {
                done: submit_pb2.SUCCEEDED,
                lost: submit_pb2.FAILED,
            }
            assert _job_events(client, "before", done) == done_events
            assert [kind for _, kind in done_events][-1] == "succeeded"
            assert [line.line for line in JobLogClient(url, done, disable_ssl=True).logs()] == [
                "finished before the kill"
            ]
            lost_events = _job_events(client, "lost", lost)
            assert [kind for _, kind in lost_events][-2:] == ["running", "failed"]
            failed = job_set_events(client, "cli", "lost", from_id=lost_events[-2][0])[0].message.failed
            assert failed.reason == "Pod is unexpectedly missing in Kubernetes"
            # Armada's executor marks this failure of its own (errormatch/types.go, pod_issue_handler.go).
            assert (failed.failure_category, failed.failure_subcategory) == ("internal", "pod-missing")
            assert job_error(client, lost) == "Pod is unexpectedly missing in Kubernetes"

            armada_flyte.configure(armada_url=url, node_groups_preset="embedded")
            try:
                meta = ArmadaJobMetadata(job_id=lost, job_set_id="lost", queue="cli", submitted_at=time.time())
                resource = run(ArmadaConnector().get(meta))
            finally:
                armada_flyte.configure()
            assert resource.phase == TaskExecution.FAILED
            assert "Pod is unexpectedly missing in Kubernetes" in resource.message

            again = submit_one(client, "cli", "before", item(pod(python("print('after the restart')"))))
            wait_for_state(client, again, submit_pb2.SUCCEEDED)
            resumed = _job_events(client, "before", again)
            assert resumed[0][0] > done_events[-1][0]  # message ids go on increasing
            assert [m.id for m in job_set_events(client, "cli", "before", from_id=done_events[-1][0])] == [
                message_id for message_id, _ in resumed
            ]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_pod_still_starting_when_the_server_died_is_retried_after_a_restart(tmp_path) -> None:
    """A pod still in its init container (PENDING) when the server died has its lease returned and
    runs again (Armada retries a run whose pod vanished before it started: pod_issue_handler.go,
    internal/scheduler/scheduler.go)."""
    state_dir = tmp_path / "state"
    spec = pod(python("print('main ran')"))
    init = core.Container(name="init", image=spec.containers[0].image, command=python("import time; time.sleep(300)"))
    init.resources.CopyFrom(spec.containers[0].resources)
    spec.initContainers.append(init)
    process, url = _start_persistent(state_dir)
    try:
        with grpc.insecure_channel(url) as channel:
            client = ArmadaClient(channel)
            starting = submit_one(client, "cli", "starting", item(spec))
            wait_for_state(client, starting, submit_pb2.PENDING)
            wait_until(
                lambda: saved_job_states(state_dir).get(starting) == JobState.PENDING, what="the pending job saved"
            )
            process.kill()
            process.wait()
        process, url = _start_persistent(state_dir)
        with grpc.insecure_channel(url) as channel:
            client = ArmadaClient(channel)
            wait_until(
                lambda: _job_events(client, "starting", starting)[-1][1] == "pending",
                what="the job leased and pending again",
            )
            kinds = [k for _, k in _job_events(client, "starting", starting)]
            assert kinds == ["submitted", "queued", "leased", "pending", "lease_returned", "leased", "pending"]
            details = client.get_job_details([starting]).job_details[starting]  # armada_client expands runs
            assert len(details.job_runs) == 2  # newest first: the new run, then the returned one
            assert details.job_runs[1].state == 9  # RUN_STATE_LEASE_RETURNED (job.proto)
    finally:
        process.kill()
        process.wait()


def test_two_servers_cannot_share_a_state_folder(tmp_path) -> None:
    process, _ = _start_persistent(tmp_path / "state")
    try:
        done = subprocess.run(
            [*DEV, "--port", "0", "--no-blob-store", "--state-dir", str(tmp_path / "state")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1
        assert "another armada-flyte dev server uses this state folder" in done.stderr
    finally:
        process.kill()
        process.wait()
