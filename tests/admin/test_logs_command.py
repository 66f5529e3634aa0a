"""`armada-flyte logs JOB_ID`: a job's log from Armada's Binoculars at any time after it ran on the embedded
server (even after a restart, when `kubectl logs` of its pod answers NotFound); against a Binoculars whose pod
is gone (real Binoculars' NOT_FOUND), or none at all, it says where the log went."""

from __future__ import annotations

import subprocess
import sys
from concurrent import futures

import grpc
import pytest
from armada_client.armada import binoculars_pb2_grpc
from armada_client.client import ArmadaClient

from support.armada_channels import armada_channel
from support.pods import item, pod, python, submit_one
from support.waiting import wait_for_state

pytestmark = pytest.mark.embedded_only

LOGS = [sys.executable, "-m", "armada_flyte.admin.cli", "logs"]
GONE = "the pod with these logs no longer exists (cleaned up after its job finished)"
"""In substance what real Binoculars (internal/binoculars/service/logs.go) answers, NOT_FOUND, once the pod is gone."""


def logs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*LOGS, *args], capture_output=True, text=True, timeout=60)


def embedded(**config):
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    return EmbeddedArmada(EmbeddedConfig(port=0, queues=("q",), **config))


def ran(armada, code: str) -> str:
    from armada_client.armada import submit_pb2

    client = ArmadaClient(armada_channel(armada.url))
    job_id = submit_one(client, "q", "logs", item(pod(python(code))))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    return job_id


def test_a_jobs_log_is_printed_after_the_server_restarted(tmp_path) -> None:
    """On dev the log is kept with the job: its pod is long gone (and the server restarted) when it is asked for."""
    state = tmp_path / "state"
    with embedded(state_dir=state) as armada:
        job_id = ran(armada, "print('first line'); print('second line')")
    with embedded(state_dir=state) as armada:
        done = logs("--armada", armada.url, job_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["first line", "second line"], done.stdout


def test_an_unknown_job_is_named_with_the_armada_asked(tmp_path) -> None:
    with embedded() as armada:
        done = logs("--armada", armada.url, "01nosuchjob000000000000000")
    assert done.returncode == 1
    assert f"Armada at {armada.url} knows no job 01nosuchjob000000000000000" in done.stderr, done.stderr


class _PodGone(binoculars_pb2_grpc.BinocularsServicer):
    def Logs(self, request, context):
        context.abort(grpc.StatusCode.NOT_FOUND, GONE)


@pytest.fixture
def binoculars_without_the_pod():
    """A Binoculars answering as real Binoculars does once the pod was cleaned up."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    binoculars_pb2_grpc.add_BinocularsServicer_to_server(_PodGone(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(None)


def test_when_binoculars_no_longer_has_the_pod_it_says_where_the_log_went(binoculars_without_the_pod) -> None:
    with embedded() as armada:
        job_id = ran(armada, "print('gone')")
        node = armada.job(job_id).node
        done = logs("--armada", armada.url, "--binoculars", binoculars_without_the_pod, job_id)
    assert done.returncode == 1 and done.stdout == ""
    said = done.stderr
    assert f"the pod of job {job_id} (armada-{job_id}-0 in namespace default on node {node} of cluster " in said
    assert "Armada keeps no logs" in said and "3 minutes after they succeed" in said, said
    assert f"under pod armada-{job_id}-0 and label armada_job_id={job_id}" in said, said
    assert "NOT_FOUND" in said, said


def test_without_a_binoculars_it_says_how_to_name_one() -> None:
    with embedded() as armada:
        job_id = ran(armada, "print('x')")
        done = logs("--armada", armada.url, "--binoculars", "127.0.0.1:1", job_id)
    assert done.returncode == 1
    assert "no Binoculars answered at 127.0.0.1:1" in done.stderr and "--binoculars" in done.stderr, done.stderr
    assert f"kubectl logs -n default armada-{job_id}-0" in done.stderr, done.stderr


@pytest.mark.pure
def test_a_job_id_that_is_no_id_is_refused_by_name() -> None:
    from armada_flyte.admin.cli import main

    assert main(["logs", "--armada", "127.0.0.1:1", "../etc/passwd"]) == 1
