"""`armada-flyte view`: the local view pointed at an Armada by address, following the job sets it is told."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import urllib.request

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

from support.pods import item, pod, submit_one
from support.waiting import wait_for_state

VIEW = [sys.executable, "-m", "armada_flyte.admin.cli", "view"]


@pytest.fixture(scope="module")
def armada():
    with EmbeddedArmada(EmbeddedConfig(queues=("viewed", "quiet"))) as server:
        yield server


def _view_url(process: subprocess.Popen) -> str:
    """The address the command prints first (it prints it before anything else, once it listens)."""
    line = process.stdout.readline()
    match = re.fullmatch(r"view: (http://127\.0\.0\.1:\d+/)\n", line)
    assert match, f"first line {line!r}; the rest: {process.stdout.read() if process.poll() is not None else ''}"
    return match.group(1)


def test_pointed_at_an_embedded_server_it_shows_every_job_set_and_every_queue(armada) -> None:
    """No --job-set needed: the embedded server (as `armada-flyte dev`) lists its job sets."""
    with grpc.insecure_channel(armada.url) as channel:
        client = ArmadaClient(channel)
        job_id = submit_one(client, "viewed", "named", item(pod(["true"])))
        other = submit_one(client, "viewed", "not-named", item(pod(["true"])))
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    command = [*VIEW, "--armada", armada.url, "--preset", "embedded"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with urllib.request.urlopen(_view_url(process), timeout=30) as response:
            page = response.read().decode()
        assert f'data-job-id="{job_id}" data-state="SUCCEEDED"' in page and f'data-job-id="{other}"' in page
        assert 'data-job-set="named"' in page and 'data-job-set="not-named"' in page
        assert "following every job set this Armada holds" in page
        assert 'data-queue="quiet"' in page  # Submit.GetQueues lists every queue
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_a_job_set_must_name_its_queue() -> None:
    done = subprocess.run([*VIEW, "--job-set", "no-queue"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "write it as QUEUE/JOB_SET" in done.stderr


def test_an_unreachable_armada_is_said_on_the_page() -> None:
    command = [*VIEW, "--armada", "127.0.0.1:1", "--job-set", "q/js"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with urllib.request.urlopen(_view_url(process), timeout=120) as response:
            page = response.read().decode()
        assert "at 127.0.0.1:1 failed: UNAVAILABLE" in page
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_a_port_in_use_or_out_of_range_is_said_not_raised() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*VIEW, "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"the view can't listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    done = subprocess.run([*VIEW, "--port", "70000"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "70000 is not a port (0 to 65535)" in done.stderr
