"""The docker pod runner's run loop against a stand-in Docker API (nothing here pulls or runs a real container;
test_docker_executor_real.py does, on a real engine; tests/pod_runner/test_docker_pod_runner.py checks the
container settings built from a leased pod).
"""

from __future__ import annotations

import grpc
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.pod_runner.docker import DockerPodRunner

from support.pods import arm64_pod, item, submit_one
from support.waiting import job_error, wait_for_state


class FakeContainer:
    """What the Docker SDK returns for a started container, scripted: output, exit code, and stops."""

    def __init__(self, stdout: bytes, stderr: bytes, exit_code: int):
        self.chunks = [(stdout, None), (None, stderr)]
        self.exit_code = exit_code
        self.calls: list[str] = []
        self.stopped_with: list[int] = []
        self.removed = False
        self.attrs = {"State": {"OOMKilled": False}}

    def attach(self, **options):
        assert options["demux"] and options["stream"]
        self.calls.append("attach")
        return iter(self.chunks)

    def start(self):
        self.calls.append("start")

    def wait(self):
        return {"StatusCode": self.exit_code}

    def reload(self):
        pass

    def stop(self, timeout: int):
        self.stopped_with.append(timeout)

    def remove(self, force: bool):
        self.removed = True


class FakeDockerClient:
    """Stands in for `docker.DockerClient`: records the containers it was asked to create."""

    def __init__(self, container: FakeContainer):
        self.created: list[dict] = []
        self.container = container
        self.containers = self

    def create(self, **options):
        self.created.append(options)
        return self.container


def test_a_pod_runs_through_the_docker_api_and_reports_its_exit() -> None:
    container = FakeContainer(b"hello\n", b"disk full\n", exit_code=3)
    docker_client = FakeDockerClient(container)
    with (
        EmbeddedArmada(EmbeddedConfig(pod_runner=DockerPodRunner(client=docker_client))) as armada,
        grpc.insecure_channel(armada.url) as channel,
    ):
        client = ArmadaClient(channel)
        job_id = submit_one(client, "flyte", "js", item(arm64_pod(["python3", "-c", "..."])))
        wait_for_state(client, job_id, submit_pb2.FAILED)
        error = job_error(client, job_id)
        assert error == "Container main failed with exit code 3 because Error: disk full\n"  # pod_status.go
        assert armada.logs(job_id)[-2:] == ["hello", "disk full"]
    assert docker_client.created[0]["platform"] == "linux/arm64"
    assert container.calls == ["attach", "start"]  # attached first: no output is lost
    assert container.removed
