"""The docker pod runner's container settings, built from a leased pod as Kubernetes would run it, and its
error when no Docker daemon is reachable (nothing here talks to a real engine).
"""

from __future__ import annotations

import pytest
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.errors import InvalidConfig
from armada_flyte.pod_runner import PodLaunch, PodLog
from armada_flyte.pod_runner.docker import DockerPodRunner, container_options
from armada_flyte.pod_runner.pod_fence import PodFence

from support.pods import pod


def launch(spec: core.PodSpec, architecture: str = "arm64") -> PodLaunch:
    return PodLaunch("run-1", "job-1", "armada-job-1-0", "default", "arm64-0", "arm64", architecture, spec, PodLog())


def options(spec: core.PodSpec, architecture: str = "arm64") -> dict:
    return container_options(launch(spec, architecture))


@pytest.mark.pure
def test_runs_on_the_node_groups_platform_with_the_host_network() -> None:
    result = options(pod(["true"]), "arm64")
    assert result["platform"] == "linux/arm64"
    assert result["network_mode"] == "host"


@pytest.mark.pure
def test_command_replaces_the_entrypoint_and_args_the_cmd() -> None:
    result = options(pod(["python3"], args=["-c", "print(1)"]))
    assert (result["entrypoint"], result["command"]) == (["python3"], ["-c", "print(1)"])


@pytest.mark.pure
def test_without_command_the_images_entrypoint_stays() -> None:
    result = options(pod([], args=["a0", "--inputs", "s3://x"]))
    assert result["entrypoint"] is None and result["command"] == ["a0", "--inputs", "s3://x"]


@pytest.mark.pure
def test_image_env_working_dir_and_paths_are_kept_as_the_pod_gives_them() -> None:
    result = options(pod(["true"], env={"DEST": "/opt/flyte/"}, working_dir="/opt/flyte"))
    assert result["image"] == pod().containers[0].image
    assert result["environment"] == {"DEST": "/opt/flyte/"}
    assert result["working_dir"] == "/opt/flyte"


@pytest.mark.pure
def test_limits_become_docker_limits() -> None:
    result = options(pod(["true"], cpu="1500m", memory="256Mi"))
    assert result["nano_cpus"] == 1_500_000_000
    assert result["mem_limit"] == 256 * 2**20


@pytest.mark.pure
def test_field_refs_resolve_to_the_pod() -> None:
    spec = pod(["true"])
    spec.containers[0].env.append(
        core.EnvVar(
            name="POD", valueFrom=core.EnvVarSource(fieldRef=core.ObjectFieldSelector(fieldPath="metadata.name"))
        )
    )
    assert options(spec)["environment"]["POD"] == "armada-job-1-0"


@pytest.mark.pure
def test_containers_drop_every_capability_but_the_runtimes_defaults_less_net_raw() -> None:
    result = options(pod(["true"]))
    assert result["cap_drop"] == ["ALL"]
    containerd_defaults = {"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID"}
    containerd_defaults |= {"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}
    assert set(result["cap_add"]) == containerd_defaults - {"NET_RAW"}


@pytest.mark.pure
def test_containers_gain_no_privileges_and_have_pids_and_file_size_limits() -> None:
    spec = pod(["true"])
    fenced = container_options(launch(spec), fence=PodFence(pids_limit=64, file_size_limit=1 << 20))
    assert fenced["security_opt"] == ["no-new-privileges"]
    assert fenced["pids_limit"] == 64
    assert [(u.name, u.soft, u.hard) for u in fenced["ulimits"]] == [("fsize", 1 << 20, 1 << 20)]


@pytest.mark.pure
def test_run_as_user_and_group_become_the_containers_user() -> None:
    spec = pod(["true"])
    assert "user" not in options(spec)
    spec.securityContext.runAsUser = 1000
    assert options(spec)["user"] == "1000"
    spec.containers[0].securityContext.runAsGroup = 2000
    assert options(spec)["user"] == "1000:2000"


def test_no_reachable_daemon_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    with pytest.raises(InvalidConfig, match="no Docker daemon is reachable"):
        DockerPodRunner()
