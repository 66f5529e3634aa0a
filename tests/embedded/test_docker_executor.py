"""The docker executor: container settings built from a leased pod, and its run loop against a stand-in
Docker API (nothing here pulls or runs a real container; test_docker_executor_real.py does, on a real engine).
"""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.embedded.executors.base import PodLaunch
from armada_flyte.embedded.executors.docker import DockerExecutor, container_options
from armada_flyte.embedded.logs import PodLog
from armada_flyte.errors import InvalidConfig

from support.pods import arm64_pod, item, pod, submit_one
from support.waiting import wait_for_state


def launch(spec: core.PodSpec, architecture: str = "arm64") -> PodLaunch:
    return PodLaunch("run-1", "job-1", "armada-job-1-0", "default", "arm64-0", "arm64", architecture, spec, PodLog())


def options(spec: core.PodSpec, architecture: str = "arm64") -> dict:
    return container_options(launch(spec, architecture))


def test_runs_on_the_node_groups_platform_with_the_host_network() -> None:
    result = options(pod(["true"]), "arm64")
    assert result["platform"] == "linux/arm64"
    assert result["network_mode"] == "host"


def test_command_replaces_the_entrypoint_and_args_the_cmd() -> None:
    result = options(pod(["python3"], args=["-c", "print(1)"]))
    assert (result["entrypoint"], result["command"]) == (["python3"], ["-c", "print(1)"])


def test_without_command_the_images_entrypoint_stays() -> None:
    result = options(pod([], args=["a0", "--inputs", "s3://x"]))
    assert result["entrypoint"] is None and result["command"] == ["a0", "--inputs", "s3://x"]


def test_image_env_working_dir_and_paths_are_kept_as_the_pod_gives_them() -> None:
    result = options(pod(["true"], env={"DEST": "/opt/flyte/"}, working_dir="/opt/flyte"))
    assert result["image"] == pod().containers[0].image
    assert result["environment"] == {"DEST": "/opt/flyte/"}
    assert result["working_dir"] == "/opt/flyte"


def test_limits_become_docker_limits() -> None:
    result = options(pod(["true"], cpu="1500m", memory="256Mi"))
    assert result["nano_cpus"] == 1_500_000_000
    assert result["mem_limit"] == 256 * 2**20


def test_field_refs_resolve_to_the_pod() -> None:
    spec = pod(["true"])
    spec.containers[0].env.append(
        core.EnvVar(
            name="POD", valueFrom=core.EnvVarSource(fieldRef=core.ObjectFieldSelector(fieldPath="metadata.name"))
        )
    )
    assert options(spec)["environment"]["POD"] == "armada-job-1-0"


def test_no_reachable_daemon_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    with pytest.raises(InvalidConfig, match="no Docker daemon is reachable"):
        DockerExecutor()


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
        EmbeddedArmada(EmbeddedConfig(executor=DockerExecutor(client=docker_client))) as armada,
        grpc.insecure_channel(armada.url) as channel,
    ):
        client = ArmadaClient(channel)
        job_id = submit_one(client, "flyte", "js", item(arm64_pod(["python3", "-c", "..."])))
        wait_for_state(client, job_id, submit_pb2.FAILED)
        error = client.get_job_errors([job_id]).job_errors[job_id]
        assert error == "Container main failed with exit code 3 because Error: disk full\n"  # pod_status.go
        assert armada.logs(job_id)[-2:] == ["hello", "disk full"]
    assert docker_client.created[0]["platform"] == "linux/arm64"
    assert container.calls == ["attach", "start"]  # attached first: no output is lost
    assert container.removed
