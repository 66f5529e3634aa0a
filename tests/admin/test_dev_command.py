"""`armada-flyte dev`: starts the server, prints where it listens, and stops cleanly on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.log_client import JobLogClient

from support.pods import item, pod, python, submit_one
from support.process_checks import is_alive, pids_in_log
from support.waiting import wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only

CLI = [sys.executable, "-m", "armada_flyte.admin.cli", "dev"]


class Output:
    """The server's stdout, collected line by line on a thread so the test can wait for lines."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str) -> re.Match:
        def found():
            return next((m for line in self.lines if (m := re.search(pattern, line))), None)

        return wait_until(found, timeout=20, what=f"a line matching {pattern!r} in {self.lines}")


@pytest.fixture
def server():
    process = subprocess.Popen(
        [*CLI, "--port", "0", "--queue", "cli"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = Output(process)
    yield process, output
    if process.poll() is None:
        process.kill()
        process.wait()


def test_prints_endpoint_queue_and_node_groups(server) -> None:
    process, output = server
    output.wait_for(r"Press Ctrl-C to stop")
    text = "\n".join(output.lines)
    assert re.search(r"listening on 127\.0\.0\.1:\d+ \(executor: process\)", text)
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
    path.write_text(
        "node_groups:\n  - name: a\n    nodes: 1\n    labels: {}\n    allocatable: {cpu: '1', memory: 1Gi}\n"
    )
    done = subprocess.run([*CLI, "--port", "0", "--cluster", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "node_groups.0.labels" in done.stderr and "kubernetes.io/arch" in done.stderr


def _pod_pid(url: str, job_id: str) -> int | None:
    pids = pids_in_log([line.line for line in JobLogClient(url, job_id, disable_ssl=True).logs()], "main")
    return pids[0] if pids else None


DETACHED_CHILD = (
    "import os, sys, time\n"
    "folder = sys.argv[1]\n"
    "open(f'{folder}/main', 'w').write(str(os.getpid()))\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        open(f'{folder}/detached', 'w').write(str(os.getpid()))\n"
    "        time.sleep(300)\n"
    "    os._exit(0)\n"
    "time.sleep(300)\n"
)


def test_no_pod_process_survives_a_sigkill_of_the_server(tmp_path) -> None:
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
